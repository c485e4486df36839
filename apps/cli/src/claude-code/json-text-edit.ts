import { applyEdits, findNodeAtLocation, modify, parseTree, type JSONPath, type Node } from 'jsonc-parser';

/**
 * Edits of a JSON file's text that touch only what they add or remove (issue 30 item 10: a user's settings.json is
 * kept byte for byte where we do not write). jsonc-parser (the parser VS Code edits its settings with) finds the
 * nodes; its own `modify` re-formats whole lines around an edit, so the bytes are spliced here, in the style of the
 * member before: on its own line at that member's indent, or inline after `, `. Removing a member takes out exactly
 * what appending it put in.
 */

/** The file's indent unit and line end: a tab, or the spaces of the first indented line. */
function layoutOf(text: string): { unit: string; eol: string } {
  const indent = /\n([ \t]+)\S/.exec(text)?.[1] ?? '  ';
  return { unit: indent.startsWith('\t') ? '\t' : indent, eol: text.includes('\r\n') ? '\r\n' : '\n' };
}

function containerAt(text: string, at: JSONPath): Node | undefined {
  const root = parseTree(text);
  return root === undefined || at.length === 0 ? root : findNodeAtLocation(root, at);
}

/**
 * Appends `value` as the last member of the array at `at`, or, with `key`, as the last property of the object there.
 * The container must exist.
 */
export function appendMember(text: string, at: JSONPath, value: unknown, key?: string): string {
  const layout = layoutOf(text);
  const container = containerAt(text, at);
  const members = container?.children ?? [];
  const last = members.at(-1);
  if (last === undefined) {
    // An empty container has no member to take the style from: jsonc-parser lays it out (that one line changes).
    const tabs = layout.unit === '\t';
    const formattingOptions = {
      insertSpaces: !tabs,
      tabSize: tabs ? 1 : layout.unit.length,
      eol: layout.eol,
    };
    const path = key === undefined ? [...at, -1] : [...at, key];
    return applyEdits(
      text,
      modify(text, path, value, { formattingOptions, isArrayInsertion: key === undefined }),
    );
  }
  const before = members.at(-2);
  const gap = text.slice(before ? before.offset + before.length : container!.offset + 1, last.offset);
  const named = (json: string): string => (key === undefined ? json : `${JSON.stringify(key)}: ${json}`);
  const newline = gap.lastIndexOf('\n');
  const end = last.offset + last.length;
  if (newline === -1) return `${text.slice(0, end)}, ${named(JSON.stringify(value))}${text.slice(end)}`;
  const indent = gap.slice(newline + 1);
  const pretty = JSON.stringify(value, null, layout.unit).replaceAll('\n', `${layout.eol}${indent}`);
  return `${text.slice(0, end)},${layout.eol}${indent}${named(pretty)}${text.slice(end)}`;
}

/** Removes the member at `path` (an array index or a property key) with the separator before it. */
export function removeMember(text: string, path: JSONPath): string {
  const root = parseTree(text);
  const node = root === undefined ? undefined : findNodeAtLocation(root, path);
  if (node === undefined) return text;
  const member = node.parent?.type === 'property' ? node.parent : node;
  const container = member.parent;
  const siblings = container?.children ?? [];
  const i = siblings.indexOf(member);
  if (container === undefined || i === -1) return text;
  const prev = siblings[i - 1];
  if (prev !== undefined)
    return `${text.slice(0, prev.offset + prev.length)}${text.slice(member.offset + member.length)}`;
  const next = siblings[i + 1];
  if (next !== undefined) return `${text.slice(0, member.offset)}${text.slice(next.offset)}`;
  // The only member: the container is left empty (`[]`, `{}`), for the caller to remove if it added it.
  return `${text.slice(0, container.offset + 1)}${text.slice(container.offset + container.length - 1)}`;
}
