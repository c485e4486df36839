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

/** The cut c for which `forwarded` is the client's system-like items before c, then everything from c on. */
function findCut(
  sent: unknown[],
  forwarded: unknown[],
  isSystem: (item: unknown) => boolean,
): number | undefined {
  for (let c = 0; c <= sent.length; c++) {
    const expected = [...sent.slice(0, c).filter(isSystem), ...sent.slice(c)];
    if (same(expected, forwarded)) return c;
  }
  return undefined;
}

function otherFields(sent: Json, forwarded: Json, own: string[]): string[] {
  const keys = new Set([...Object.keys(sent), ...Object.keys(forwarded)]);
  return [...keys]
    .filter((k) => !own.includes(k) && !same(sent[k], forwarded[k]))
    .map((k) => `top-level field ${k} changed`);
}

/** Anthropic /v1/messages: system + summary block, a kept tail from a typed user turn, every tool pair whole. */
export function checkAnthropic(sent: Json, forwarded: Json): Verdict {
  const problems = otherFields(sent, forwarded, ['messages', 'system']);
  const sentMsgs = Array.isArray(sent.messages) ? sent.messages : [];
  const fwdMsgs = Array.isArray(forwarded.messages) ? (forwarded.messages as unknown[]) : [];
  const sysBlocks =
    typeof sent.system === 'string' ? [{ type: 'text', text: sent.system }] : blocks(sent.system);
  const fwdSys = blocks(forwarded.system);
  const last = fwdSys.at(-1);
  const compacted = typeof last?.text === 'string' && last.text.startsWith(FENCE_TITLE);
  if (compacted && !same(fwdSys.slice(0, -1), sysBlocks)) problems.push('client system blocks changed');
  if (!compacted && !same(forwarded.system, sent.system)) problems.push('system changed without a summary');
  const cut = findCut(sentMsgs, fwdMsgs, (m) => isObj(m) && m.role === 'system');
  if (cut === undefined) problems.push('messages are not the client system items plus a suffix, as sent');
  if (compacted !== (cut !== undefined && cut > 0))
    problems.push('a summary without a cut, or a cut without one');
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

/** Responses: a developer summary item first, instructions untouched, calls and outputs paired by call_id. */
export function checkResponses(sent: Json, forwarded: Json): Verdict {
  const problems = otherFields(sent, forwarded, ['input']);
  const sentItems = Array.isArray(sent.input) ? sent.input : [];
  let items = Array.isArray(forwarded.input) ? (forwarded.input as unknown[]) : [];
  const head = items[0];
  const compacted = isObj(head) && head.role === 'developer' && itemText(head).startsWith(FENCE_TITLE);
  const summary = compacted ? itemText(head) : undefined;
  if (compacted) items = items.slice(1);
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
