import { newestTyped } from './rebuild';
import type { NeutralMessage } from './types';

/** Ids the projected calls and their results share; no client sends ids of this form. */
const PROJECTED_ID = 'context-guardian-next-';

/**
 * The messages of the request the next turn will send, as far as this request tells (ADR 0009): these, then the next
 * turn the size and shape of the last one. Their text is empty: only sizes, roles and the pairing of calls and
 * results count.
 *
 * - A request that asks a person's question (a message they typed after the last answer): the answer to it is
 *   projected as the answer to the turn before was (its tool calls, their results, the reply: a coding agent's turn
 *   is all of them), then the question again at the same size. Before any answer, only the newest message is asked
 *   again: what came before it (Codex's environment context, a first prompt's preamble) is sent once.
 * - A request that ends in tool results: one more round, a call the size of the last one and its results again.
 * - A request that ends in an answer (an assistant prefill) asks nothing new: its messages are returned as they are.
 *
 * The background pre-compactor plans this request with the planner the foreground uses (planCompaction), so the cut
 * it summarises ahead is the cut the next turn takes when turns keep their size and shape.
 */
export function nextTurnMessages(messages: readonly NeutralMessage[]): NeutralMessage[] {
  let asked = messages.length;
  while (asked > 0 && messages[asked - 1]!.role !== 'assistant') asked--;
  const question = messages.slice(asked).filter((m) => m.role !== 'system');
  if (question.length === 0) return [...messages];
  const ids = new Projection();
  const typed = newestTyped(messages, asked);
  if (typed === undefined) {
    // A tool loop: another call like the last one, answered like this one.
    const calls = question.flatMap((m) => m.resultIds).map(() => ids.fresh());
    let next = 0;
    const call = { ...blank('assistant', asked > 0 ? messages[asked - 1]!.chars : 0), callIds: calls };
    return [
      ...messages,
      call,
      ...question.map((m) =>
        again(
          m,
          [],
          m.resultIds.map(() => calls[next++]!),
        ),
      ),
    ];
  }
  // A person's question: the previous turn's answer part (everything after the person's message before it), then the
  // question again (before any answer, only the newest message).
  const previous = newestTyped(messages.slice(0, asked), 0);
  const answer =
    previous === undefined
      ? []
      : messages.slice(previous + 1, asked).filter((m) => m.role !== 'system' && !m.userTyped);
  const replies = answer.length > 0 ? answer.map((m) => ids.copy(m)) : [blank('assistant', 0)];
  const asks = asked === 0 ? messages.slice(typed).filter((m) => m.role !== 'system') : question;
  return [...messages, ...replies, ...asks.map((m) => ids.copy(m))];
}

/** Fresh ids for projected calls, each result paired with the call it answered in the turn copied. */
class Projection {
  private next = 0;
  private readonly renamed = new Map<string, string>();

  fresh(): string {
    return `${PROJECTED_ID}${this.next++}`;
  }

  copy(m: NeutralMessage): NeutralMessage {
    const id = (old: string): string => {
      let now = this.renamed.get(old);
      if (now === undefined) {
        now = this.fresh();
        this.renamed.set(old, now);
      }
      return now;
    };
    return again(m, m.callIds.map(id), m.resultIds.map(id));
  }
}

function again(m: NeutralMessage, callIds: string[], resultIds: string[]): NeutralMessage {
  return {
    ...m,
    text: '',
    callIds,
    resultIds,
    toolCalls: m.toolCalls.map((c) => ({ ...c, args: '' })),
    digest: '',
  };
}

function blank(role: NeutralMessage['role'], chars: number): NeutralMessage {
  return {
    role,
    text: '',
    chars,
    callIds: [],
    resultIds: [],
    toolCalls: [],
    userTyped: false,
    spillable: false,
    digest: '',
  };
}
