/**
 * What a forwarded request must look like next to the one the client sent, in each format. Each check returns a
 * list of problems (empty when the request is right), so a failing test names what is wrong and where.
 */
export type Json = Record<string, unknown>;

export const FENCE_TITLE = '## Context Guardian: archived conversation';

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const blocks = (content: unknown): Json[] => (Array.isArray(content) ? content.filter(isObj) : []);

export interface Verdict {
  problems: string[];
  compacted: boolean;
  /** Index in the client's list where the kept tail starts (0 when nothing was evicted). */
  cut: number;
  /** The summary text guardian placed, when it compacted. */
  summary?: string;
}

/** The pointer a big-paste spill leaves in the text it cut (libs/compaction spillPointer). */
export const SPILL_POINTER = '[context-guardian: message ';

/** An item as sent, or the same item with its text cut by a spill (same role and type, the pointer inside). */
function sameItem(sent: unknown, forwarded: unknown): boolean {
  if (same(sent, forwarded)) return true;
  return (
    isObj(sent) &&
    isObj(forwarded) &&
    sent.role === forwarded.role &&
    sent.type === forwarded.type &&
    itemText(forwarded).includes(SPILL_POINTER)
  );
}

const sameItems = (a: unknown[], b: unknown[]): boolean =>
  a.length === b.length && a.every((x, i) => sameItem(x, b[i]));

/** The cut c for which `forwarded` is the client's system-like items before c, then everything from c on. */
function findCut(
  sent: unknown[],
  forwarded: unknown[],
  isSystem: (item: unknown) => boolean,
): number | undefined {
  for (let c = 0; c <= sent.length; c++) {
    const expected = [...sent.slice(0, c).filter(isSystem), ...sent.slice(c)];
    if (sameItems(expected, forwarded)) return c;
  }
  return undefined;
}

function otherFields(sent: Json, forwarded: Json, own: string[]): string[] {
  const keys = new Set([...Object.keys(sent), ...Object.keys(forwarded)]);
  return [...keys]
    .filter((k) => !own.includes(k) && !same(sent[k], forwarded[k]))
    .map((k) => `top-level field ${k} changed`);
}

/** A system value or a system item's content as text blocks (a string is one block). */
const textBlocks = (v: unknown): Json[] =>
  typeof v === 'string' ? (v ? [{ type: 'text', text: v }] : []) : blocks(v);

/**
 * Anthropic /v1/messages: the client's system, then any system items eviction left at the front of `messages`, then
 * the summary block, all in `system`; `messages` starting at a typed user turn; every tool pair whole.
 */
export function checkAnthropic(sent: Json, forwarded: Json): Verdict {
  // context_management is applied by guardian and cut out for a backend that has none (docs/native-compaction.md).
  const applied = 'context_management' in forwarded ? [] : ['context_management'];
  const problems = otherFields(sent, forwarded, ['messages', 'system', ...applied]);
  const sentMsgs = Array.isArray(sent.messages) ? sent.messages : [];
  const fwdMsgs = Array.isArray(forwarded.messages) ? (forwarded.messages as unknown[]) : [];
  const sysBlocks = textBlocks(sent.system);
  const fwdSys = blocks(forwarded.system);
  const last = fwdSys.at(-1);
  const compacted = typeof last?.text === 'string' && last.text.startsWith(FENCE_TITLE);
  if (!compacted && !same(forwarded.system, sent.system)) problems.push('system changed without a summary');
  const isSys = (m: unknown): boolean => isObj(m) && m.role === 'system';
  let cut: number | undefined;
  for (let c = 0; c <= sentMsgs.length && cut === undefined; c++) {
    const kept = [...sentMsgs.slice(0, c).filter(isSys), ...sentMsgs.slice(c)];
    let lead = 0;
    if (compacted && c > 0) while (lead < kept.length && isSys(kept[lead])) lead++;
    const moved = kept.slice(0, lead).flatMap((m) => textBlocks(isObj(m) ? m.content : undefined));
    const system = compacted ? [...sysBlocks, ...moved, last] : fwdSys;
    if (sameItems(kept.slice(lead), fwdMsgs) && same(system, fwdSys)) cut = c;
  }
  if (cut === undefined)
    problems.push('system and messages are not the client system, items and a suffix, as sent');
  if (compacted !== (cut !== undefined && cut > 0))
    problems.push('a summary without a cut, or a cut without one');
  if (compacted && (!isObj(fwdMsgs[0]) || fwdMsgs[0].role !== 'user'))
    problems.push('messages do not start with a user turn');
  const turns = fwdMsgs.filter((m): m is Json => isObj(m) && m.role !== 'system');
  const first = turns[0];
  if (first?.role !== 'user' || blocks(first.content).some((b) => b.type === 'tool_result'))
    problems.push('the kept tail does not start at a typed user turn');
  const used = new Set<string>();
  turns.forEach((m, i) => {
    for (const b of blocks(m.content)) {
      if (b.type === 'tool_use') {
        used.add(String(b.id));
        const answer = turns[i + 1];
        const answered = blocks(answer?.content).some(
          (r) => r.type === 'tool_result' && r.tool_use_id === b.id,
        );
        if (!answered && i + 1 < turns.length)
          problems.push(`tool_use ${String(b.id)} has no tool_result after it`);
      }
      if (b.type === 'tool_result' && !used.has(String(b.tool_use_id)))
        problems.push(`tool_result ${String(b.tool_use_id)} has no tool_use before it`);
    }
  });
  return { problems, compacted, cut: cut ?? -1, summary: compacted ? String(last?.text) : undefined };
}

function itemText(item: unknown): string {
  if (!isObj(item)) return '';
  if (typeof item.content === 'string') return item.content;
  return blocks(item.content)
    .map((p) => (typeof p.text === 'string' ? p.text : ''))
    .join('\n');
}

const isSystemItem = (i: unknown): boolean =>
  isObj(i) &&
  (i.type === undefined || i.type === 'message') &&
  (i.role === 'system' || i.role === 'developer');

/**
 * Responses: the developer summary item right after the client's leading instruction items, instructions untouched,
 * calls and outputs paired by call_id.
 */
export function checkResponses(sent: Json, forwarded: Json): Verdict {
  const problems = otherFields(sent, forwarded, ['input']);
  const sentItems = Array.isArray(sent.input) ? sent.input : [];
  let items = Array.isArray(forwarded.input) ? (forwarded.input as unknown[]) : [];
  const at = items.findIndex(
    (i) => isObj(i) && i.role === 'developer' && itemText(i).startsWith(FENCE_TITLE),
  );
  const compacted = at !== -1;
  const summary = compacted ? itemText(items[at]) : undefined;
  if (compacted) {
    let leading = 0;
    while (leading < sentItems.length && isSystemItem(sentItems[leading])) leading++;
    if (at !== leading)
      problems.push(`summary at item ${at}, not after the ${leading} leading instruction items`);
    items = [...items.slice(0, at), ...items.slice(at + 1)];
  }
  const cut = findCut(sentItems, items, isSystemItem);
  if (cut === undefined) problems.push('input is not the client system items plus a suffix, as sent');
  if (compacted !== (cut !== undefined && cut > 0))
    problems.push('a summary without a cut, or a cut without one');
  const first = items.find((i) => !isSystemItem(i));
  if (!isObj(first) || first.role !== 'user') problems.push('the kept tail does not start at a user message');
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (const item of items) {
    if (!isObj(item) || typeof item.call_id !== 'string') continue;
    const type = String(item.type);
    if (type.endsWith('_output')) {
      if (!calls.has(item.call_id)) problems.push(`${type} ${item.call_id} has no call before it`);
      answered.add(item.call_id);
    } else calls.add(item.call_id);
  }
  for (const id of calls) if (!answered.has(id)) problems.push(`call ${id} has no output`);
  return { problems, compacted, cut: cut ?? -1, summary };
}
