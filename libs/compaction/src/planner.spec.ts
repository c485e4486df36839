import { evictedIndexes } from './cuts';
import { requestChars, tokensForChars } from './estimate';
import { planCompaction, tokensAfterCut, type PlanInput } from './planner';
import type { BudgetInfo, KeepRecent, NeutralMessage } from './types';

// One char per token and 88 chars per message: with the 12-char overhead every message is exactly 100 tokens.
const counter = { charsPerToken: 1, factor: 1 };
const BODY = 88;

/** `u` user, `a` assistant, `s` system, `a:1,2` calls 1 and 2, `t:1` answers 1; `*3` makes a message 3x larger. */
function conv(spec: string): NeutralMessage[] {
  return spec.split(' ').map((token, i) => {
    const [head = '', size = '1'] = token.split('*');
    const [kind = '', ids = ''] = head.split(':');
    const idList = ids ? ids.split(',') : [];
    const role = ({ u: 'user', a: 'assistant', s: 'system', t: 'tool' } as const)[
      kind as 'u' | 'a' | 's' | 't'
    ];
    const chars = (BODY + 12) * Number(size) - 12;
    return {
      role,
      text: `message ${i}`,
      chars,
      callIds: kind === 'a' ? idList : [],
      resultIds: kind === 't' ? idList : [],
      toolCalls: [],
      userTyped: kind === 'u',
      spillable: true,
      digest: `d${i}`,
    };
  });
}

const turns = (count: number): string => Array.from({ length: count }, () => 'u a').join(' ');

/** window 2000, no reserve, threshold 0.5: budget 1000 tokens, ten 100-token messages. */
const budget: BudgetInfo = { window: 2000, budget: 1000, reserve: 0, reserveClamped: false };

function input(spec: string, keep: KeepRecent, memo?: PlanInput['memo']): PlanInput {
  const messages = conv(spec);
  const requestTokens = tokensForChars(requestChars(messages, 0), counter);
  return { messages, fixedChars: 0, counter, budget, keep, requestTokens, memo };
}

describe('planCompaction', () => {
  it('forwards a request that fits, up to the budget exactly', () => {
    expect(planCompaction(input(turns(5), { fraction: 0.3 }))).toEqual({ action: 'fits', tokens: 1000 });
    expect(planCompaction(input(turns(4), { fraction: 0.3 }))).toEqual({ action: 'fits', tokens: 800 });
  });

  // keep-recent: about fraction x (window - reserve) verbatim, at least 4 messages, or exactly keep.messages.
  it.each([
    { name: 'fraction 0.3 keeps 600 tokens: six messages', keep: { fraction: 0.3 }, cut: 14 },
    {
      name: 'fraction 0.35 keeps up to 700 tokens: snapped back to a user message',
      keep: { fraction: 0.35 },
      cut: 12,
    },
    { name: 'a lower target snaps back to the user message before it', keep: { fraction: 0.25 }, cut: 14 },
    { name: 'a tiny fraction still keeps 4 messages', keep: { fraction: 0.01 }, cut: 16 },
    { name: 'keep.messages 2 keeps exactly 2', keep: { fraction: 0.3, messages: 2 }, cut: 18 },
    { name: 'keep.messages 6 keeps exactly 6', keep: { fraction: 0.01, messages: 6 }, cut: 14 },
    { name: 'keep.messages 3 lands on an assistant: keeps 4', keep: { fraction: 0.3, messages: 3 }, cut: 16 },
  ])('$name', ({ keep, cut }) => {
    expect(planCompaction(input(turns(10), keep))).toEqual({ action: 'compact', from: 0, cut });
  });

  it('measures the keep-recent share against window - reserve', () => {
    const messages = conv(turns(10));
    const withReserve: PlanInput = {
      messages,
      fixedChars: 0,
      counter,
      budget: { window: 2000, budget: 1000, reserve: 1000, reserveClamped: false },
      keep: { fraction: 0.6 },
      requestTokens: 2000,
    };
    // 0.6 x (2000 - 1000) = 600 tokens: six messages, not the twelve 0.6 x 2000 would keep.
    expect(planCompaction(withReserve)).toEqual({ action: 'compact', from: 0, cut: 14 });
  });

  it('moves the cut before a tool call whose result the target would separate from it', () => {
    // Target for 4 kept messages is 12, between call 1 (index 11) and its result (index 12).
    const plan = planCompaction(input('u a u a u a u a u a u a:1 t:1 a u a', { fraction: 0.01 }));
    expect(plan).toEqual({ action: 'compact', from: 0, cut: 10 });
  });

  it('keeps a pair whole when parallel results arrive out of order after a user message', () => {
    const spec = 'u a u a u a u a u a:1,2 t:2 u t:1 a u a';
    const plan = planCompaction(input(spec, { fraction: 0.01 }));
    expect(plan).toEqual({ action: 'compact', from: 0, cut: 8 });
  });

  it('counts system messages as kept, never evicted', () => {
    const spec = `s ${turns(10)}`;
    const plan = planCompaction(input(spec, { fraction: 0.3 }));
    expect(plan).toEqual({ action: 'compact', from: 0, cut: 15 });
    expect(evictedIndexes(conv(spec), 0, 15)).toHaveLength(14);
  });

  describe('with a memoized (sticky) cut', () => {
    it('reuses it while summary + kept tail fit', () => {
      // Cut 12 keeps 8 messages (800) + a 100-token summary = 900 <= 1000.
      const plan = planCompaction(input(turns(10), { fraction: 0.3 }, { cut: 12, summaryTokens: 100 }));
      expect(plan).toEqual({ action: 'reuse', cut: 12, tokens: 900 });
    });

    it('reuses it at the budget exactly', () => {
      const plan = planCompaction(input(turns(10), { fraction: 0.3 }, { cut: 12, summaryTokens: 200 }));
      expect(plan).toEqual({ action: 'reuse', cut: 12, tokens: 1000 });
    });

    it('chooses a later cut and extends from the memo once it no longer fits', () => {
      const plan = planCompaction(input(turns(10), { fraction: 0.3 }, { cut: 12, summaryTokens: 300 }));
      expect(plan).toEqual({ action: 'compact', from: 12, cut: 14 });
    });

    it('counts system messages and the fixed part in the reused request', () => {
      const base = input(`s ${turns(10)}`, { fraction: 0.3 }, { cut: 13, summaryTokens: 50 });
      const withFixed = { ...base, fixedChars: 80 };
      expect(tokensAfterCut(withFixed, 13, 50)).toBe(80 + 100 + 50 + 800);
      expect(planCompaction(withFixed)).toEqual({ action: 'compact', from: 13, cut: 15 });
      expect(planCompaction(base)).toEqual({ action: 'reuse', cut: 13, tokens: 950 });
    });

    it('still forwards unchanged when the whole request fits', () => {
      expect(planCompaction(input(turns(5), { fraction: 0.3 }, { cut: 4, summaryTokens: 10 }))).toEqual({
        action: 'fits',
        tokens: 1000,
      });
    });
  });

  describe('when nothing can be evicted', () => {
    it.each([
      { name: 'one huge user message', spec: 'u*20' },
      { name: 'one user message and its tool loop', spec: 'u a:1 t:1*9 a:2 t:2*9 a' },
      { name: 'system messages and one user message', spec: 's*5 u*10 s' },
    ])('$name: no-cut', ({ spec }) => {
      const i = input(spec, { fraction: 0.3 });
      expect(planCompaction(i)).toEqual({ action: 'no-cut', tokens: i.requestTokens });
    });

    it('never proposes a cut that evicts no message (a leading system prompt)', () => {
      // Cut 1 would only "evict" the system prompt, which is never evicted: the stretch would be empty.
      const i = input('s u*10 a u', { fraction: 0.01 });
      const plan = planCompaction(i);
      const evicted =
        plan.action === 'compact' ? evictedIndexes(i.messages, plan.from, plan.cut) : ['no-cut'];
      expect(evicted).not.toEqual([]);
    });

    it('falls forward to the next cut that evicts something', () => {
      // Four kept messages would need cut 2 (an assistant), then cut 1 evicts nothing: cut 3 is the one.
      expect(planCompaction(input('s u*10 a u a u', { fraction: 0.01 }))).toEqual({
        action: 'compact',
        from: 0,
        cut: 3,
      });
    });
  });
});
