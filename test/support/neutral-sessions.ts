import type { NeutralMessage } from '@guardian/compaction';

/**
 * Random conversations for the planner's property tests (libs/compaction/src/*.property.spec.ts), as a list of
 * operations: assistants open 1-3 tool calls whose results come later in any order, sometimes inside a user message
 * (Anthropic tool_result blocks); system messages anywhere. A message op with `pin` / `rule` says a pin and a standing
 * instruction in its text.
 */
export type SessionOp =
  | { kind: 'user' | 'assistant' | 'system'; chars: number; pin?: boolean; rule?: boolean }
  | { kind: 'calls'; count: number; chars: number }
  | { kind: 'result' | 'user-result'; pick: number; chars: number };

/** A neutral message of `size` characters at index `i`, with `more` over the defaults. */
export function neutralMessage(
  role: NeutralMessage['role'],
  size: number,
  i: number,
  more: Partial<NeutralMessage> = {},
): NeutralMessage {
  return {
    role,
    text: `message ${i}`,
    chars: size,
    callIds: [],
    resultIds: [],
    toolCalls: [],
    userTyped: role === 'user',
    spillable: true,
    digest: `d${i}`,
    ...more,
  };
}

/** The messages the operations make; a result with no call still open is left out. */
export function buildSession(ops: readonly SessionOp[]): NeutralMessage[] {
  const out: NeutralMessage[] = [];
  const pending: string[] = [];
  let next = 0;
  for (const o of ops) {
    const i = out.length;
    if (o.kind === 'calls') {
      const callIds = Array.from({ length: o.count }, () => `call_${next++}`);
      pending.push(...callIds);
      out.push(neutralMessage('assistant', o.chars, i, { callIds }));
    } else if ('pick' in o) {
      if (pending.length === 0) continue;
      const [id = ''] = pending.splice(o.pick % pending.length, 1);
      const role = o.kind === 'result' ? 'tool' : 'user';
      out.push(neutralMessage(role, o.chars, i, { resultIds: [id], userTyped: false }));
    } else if (o.pin === undefined && o.rule === undefined) {
      out.push(neutralMessage(o.kind, o.chars, i));
    } else {
      const said = [
        `message ${i}.`,
        o.pin ? `Remember this: the port of service ${i} is ${1000 + i}.` : '',
        o.rule ? `Always answer in the style number ${i}.` : '',
      ].join(' ');
      out.push(neutralMessage(o.kind, Math.max(o.chars, said.length), i, { text: said }));
    }
  }
  return out;
}
