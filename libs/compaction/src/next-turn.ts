import { newestTyped } from './rebuild';
import type { NeutralMessage } from './types';

/** Ids the projected answer's calls and their results share; no client sends ids of this form. */
const PROJECTED_ID = 'context-guardian-next-';

/**
 * The messages of the request the next turn will send, as far as this request tells (ADR 0009): these, then an answer
 * the size of the last answer in them (none before the first), then again what this request asks after that answer
 * (a person's message, or the results of tool calls) at the same sizes. Their text is empty: only their sizes, roles and pairing count.
 *
 * The background pre-compactor plans this request with the planner the foreground uses (planCompaction), so the cut
 * it summarises ahead is the cut the next turn takes when turns keep their size. A request that ends in an answer
 * (an assistant prefill) asks nothing new: its messages are returned as they are.
 */
export function nextTurnMessages(messages: readonly NeutralMessage[]): NeutralMessage[] {
  let asked = messages.length;
  while (asked > 0 && messages[asked - 1]!.role !== 'assistant') asked--;
  // Before any answer, what the next turn asks is the person's newest message: the messages before it (Codex's
  // environment context, a first prompt's preamble) are sent once.
  const answered = asked > 0;
  if (!answered) asked = newestTyped(messages, 0) ?? 0;
  const question = messages.slice(asked).filter((m) => m.role !== 'system');
  if (question.length === 0) return [...messages];
  const ids = question.flatMap((m) => m.resultIds).map((_, i) => `${PROJECTED_ID}${i}`);
  const answer: NeutralMessage = {
    role: 'assistant',
    text: '',
    chars: answered ? messages[asked - 1]!.chars : 0,
    callIds: ids,
    resultIds: [],
    toolCalls: [],
    userTyped: false,
    spillable: false,
    digest: '',
  };
  let next = 0;
  const again = question.map((m): NeutralMessage => ({
    ...m,
    text: '',
    callIds: [],
    resultIds: m.resultIds.map(() => ids[next++]!),
    toolCalls: [],
    digest: '',
  }));
  return [...messages, answer, ...again];
}
