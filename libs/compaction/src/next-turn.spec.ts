import { allowedCuts } from './cuts';
import { requestChars, tokensForChars } from './estimate';
import { nextTurnMessages } from './next-turn';
import { planCompaction, type PlanInput } from './planner';
import type { BudgetInfo, NeutralMessage } from './types';

const counter = { charsPerToken: 1, factor: 1 };

function m(role: NeutralMessage['role'], chars: number, extra: Partial<NeutralMessage> = {}): NeutralMessage {
  return {
    role,
    text: `${role} ${chars}`,
    chars,
    callIds: [],
    resultIds: [],
    toolCalls: [],
    userTyped: role === 'user',
    spillable: role !== 'system',
    digest: `${role}-${chars}`,
    ...extra,
  };
}

const shape = (ms: readonly NeutralMessage[]) => ms.map((x) => `${x.role}:${x.chars}`);

describe('nextTurnMessages: the request the next turn will send, projected', () => {
  it('adds an answer the size of the last one and the person’s message again', () => {
    const messages = [m('system', 100), m('user', 5000), m('assistant', 40), m('user', 4800)];
    const next = nextTurnMessages(messages);
    expect(shape(next)).toEqual([...shape(messages), 'assistant:40', 'user:4800']);
    // The projected messages carry no text, and the newest of them is a message a person typed (a cut may fall there).
    expect(next.slice(4).map((x) => x.text)).toEqual(['', '']);
    expect(allowedCuts(next)[5]).toBe(true);
  });

  it('before any answer, repeats only the newest message, not what came before it once', () => {
    // Codex sends its environment context as a user message before the first prompt.
    const messages = [m('system', 100), m('user', 477), m('user', 17000)];
    expect(shape(nextTurnMessages(messages))).toEqual([...shape(messages), 'assistant:0', 'user:17000']);
  });

  it('after a turn of tool calls, projects the same turn: the calls, their results and the reply', () => {
    // A coding agent's turn: the person's message, a call, its result, the reply. The next request holds all of them.
    const messages = [
      m('user', 300),
      m('assistant', 60, { callIds: ['c1'], spillable: false }),
      m('tool', 2000, { resultIds: ['c1'], spillable: false, userTyped: false }),
      m('assistant', 200),
      m('user', 280),
    ];
    const next = nextTurnMessages(messages);
    expect(shape(next)).toEqual([
      ...shape(messages),
      'assistant:60',
      'tool:2000',
      'assistant:200',
      'user:280',
    ]);
    expect(next[6]!.resultIds).toEqual(next[5]!.callIds);
    expect(next[5]!.callIds[0]).not.toBe('c1');
    // The cuts of the projection are this request's and the new question's: none inside the projected tool round.
    expect(allowedCuts(next).slice(5)).toEqual([false, false, false, true, false]);
  });

  it('in a tool loop, projects another call and its results, paired, with no new place to cut', () => {
    const messages = [
      m('user', 300),
      m('assistant', 60, { callIds: ['c1'], spillable: false }),
      m('tool', 2000, { resultIds: ['c1'], spillable: false, userTyped: false }),
    ];
    const next = nextTurnMessages(messages);
    expect(shape(next)).toEqual([...shape(messages), 'assistant:60', 'tool:2000']);
    expect(next[4]!.resultIds).toEqual(next[3]!.callIds);
    expect(next[3]!.callIds).toHaveLength(1);
    expect(next[3]!.callIds[0]).not.toBe('c1');
    expect(allowedCuts(next).slice(3)).toEqual([false, false, false]);
  });

  it('asks nothing new after an assistant prefill', () => {
    const messages = [m('user', 300), m('assistant', 20)];
    expect(nextTurnMessages(messages)).toEqual(messages);
  });
});

describe('the plan of the projected turn is the next request’s plan when turns keep their size', () => {
  const budget: BudgetInfo = { window: 16_000, budget: 9000, reserve: 0, reserveClamped: false };

  function input(messages: readonly NeutralMessage[], memo?: PlanInput['memo']): PlanInput {
    return {
      messages,
      fixedChars: 3000,
      counter,
      budget,
      keep: { fraction: 0.2, headroomTurns: 2 },
      requestTokens: tokensForChars(requestChars(messages, 3000), counter),
      memo,
      newBlockTokens: () => 300,
    };
  }

  it('plans the same cut from either request, every turn of a paste session', () => {
    let history = [m('system', 200), m('user', 2500)];
    let memo: PlanInput['memo'];
    let compared = 0;
    for (let turn = 2; turn <= 16; turn++) {
      const ahead = planCompaction(input(nextTurnMessages(history), memo));
      history = [...history, m('assistant', 30), m('user', 2500)];
      const real = planCompaction(input(history, memo));
      // The same action and cut (a count can differ by the first answer, which the projection had no size for).
      expect({ ...ahead, tokens: 0 }).toEqual({ ...real, tokens: 0 });
      if (real.action === 'compact') {
        compared += 1;
        // The cut evicts only messages the request before held: a summary of them can be made behind its answer.
        expect(real.cut).toBeLessThan(history.length - 2);
        memo = { cut: real.cut, summaryTokens: 250 };
      }
    }
    expect(compared).toBeGreaterThan(2);
  });
});
