import fc from 'fast-check';

import { buildSession, type SessionOp } from '../../../test/support/neutral-sessions';
import { allowedCuts, evictedIndexes } from './cuts';
import { requestChars, tokensForChars } from './estimate';
import { MIN_KEPT_MESSAGES, planCompaction, tokensAfterCut, type PlanInput } from './planner';
import type { BudgetInfo, Counter, NeutralMessage } from './types';

// Random conversations with tool calls (test/support/neutral-sessions.ts), without pins or standing instructions.
const chars = fc.integer({ min: 5, max: 400 });
const op: fc.Arbitrary<SessionOp> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('user' as const), chars }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('assistant' as const), chars }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('system' as const), chars }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('calls' as const),
      count: fc.integer({ min: 1, max: 3 }),
      chars,
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('result' as const), pick: fc.nat(), chars }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('user-result' as const), pick: fc.nat(), chars }) },
);

// Most requests open with a system prompt; some have none.
const conversation = fc
  .tuple(fc.boolean(), fc.array(op, { minLength: 1, maxLength: 60 }))
  .map(([lead, ops]) => buildSession(lead ? [{ kind: 'system', chars: 200 }, ...ops] : ops));

const settings = fc.record({
  window: fc.integer({ min: 1500, max: 6000 }),
  fraction: fc.double({ min: 0.05, max: 0.6, noNaN: true }),
  summaryTokens: fc.integer({ min: 20, max: 400 }),
  fixedChars: fc.integer({ min: 0, max: 300 }),
});

const counter: Counter = { charsPerToken: 1, factor: 1 };

function planInput(
  messages: readonly NeutralMessage[],
  s: { window: number; fraction: number; fixedChars: number },
  memo?: PlanInput['memo'],
): PlanInput {
  const reserve = 200;
  const budget: BudgetInfo = {
    window: s.window,
    budget: Math.min(Math.floor(s.window * 0.8), s.window - reserve),
    reserve,
    reserveClamped: false,
  };
  const requestTokens = tokensForChars(requestChars(messages, s.fixedChars), counter);
  return {
    messages,
    fixedChars: s.fixedChars,
    counter,
    budget,
    keep: { fraction: s.fraction },
    requestTokens,
    memo,
  };
}

const nonSystemFrom = (m: readonly NeutralMessage[], cut: number): number =>
  m.slice(cut).filter((x) => x.role !== 'system').length;

/** Checks one 'compact' plan against the rules every cut obeys. */
function checkCut(messages: readonly NeutralMessage[], from: number, cut: number): void {
  expect(cut).toBeGreaterThan(from);
  expect(cut).toBeLessThan(messages.length);
  // The kept tail starts at a user message.
  expect(messages[cut]?.role).toBe('user');
  // No call/result pair is split: both evicted or both kept.
  const callAt = new Map<string, number>();
  messages.forEach((m, i) => m.callIds.forEach((id) => callAt.set(id, i)));
  messages.forEach((m, r) => {
    for (const id of m.resultIds) {
      const c = callAt.get(id);
      if (c !== undefined) expect(c < cut && cut <= r).toBe(false);
    }
  });
  // A cut evicts something.
  expect(evictedIndexes(messages, from, cut).length).toBeGreaterThan(0);
  // At least 4 messages kept, unless no allowed cut that evicts something keeps 4.
  const allowed = allowedCuts(messages);
  const best = Math.max(
    0,
    ...allowed.flatMap((ok, c) =>
      ok && c > from && evictedIndexes(messages, from, c).length > 0 ? [nonSystemFrom(messages, c)] : [],
    ),
  );
  expect(nonSystemFrom(messages, cut)).toBeGreaterThanOrEqual(Math.min(MIN_KEPT_MESSAGES, best));
}

describe('planCompaction over random conversations with tool calls', () => {
  it('a compact plan never splits a pair, starts the tail at a user message and keeps 4 when it can', () => {
    fc.assert(
      fc.property(conversation, settings, (messages, s) => {
        const plan = planCompaction(planInput(messages, s));
        if (plan.action === 'compact') checkCut(messages, plan.from, plan.cut);
        if (plan.action === 'no-cut') {
          // Only when no allowed cut evicts anything.
          const evicting = allowedCuts(messages).some(
            (ok, c) => ok && evictedIndexes(messages, 0, c).length > 0,
          );
          expect(evicting).toBe(false);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('a growing session evicts every message exactly once, with monotonic sticky cuts', () => {
    fc.assert(
      fc.property(conversation, settings, (full, s) => {
        let memo: PlanInput['memo'];
        const evicted: number[] = [];
        for (let len = 1; len <= full.length; len++) {
          const messages = full.slice(0, len);
          const input = planInput(messages, s, memo);
          const plan = planCompaction(input);
          if (memo && plan.action !== 'fits') {
            // The sticky cut is reused while its summary and the kept tail fit, and when no later cut exists.
            const fits = tokensAfterCut(input, memo.cut, memo.summaryTokens) <= input.budget.budget;
            const allowed = allowedCuts(messages);
            const later = allowed.some((ok, c) => ok && c > memo!.cut);
            expect(plan.action === 'reuse').toBe(allowed[memo.cut] === true && (fits || !later));
          }
          if (plan.action === 'reuse') expect(plan.cut).toBe(memo?.cut);
          if (plan.action === 'compact') {
            if (memo && plan.from === 0 && !allowedCuts(messages)[memo.cut]) {
              // A result arrived after the memo's cut for a call before it: the cut is dropped, never reused.
              evicted.length = 0;
              memo = undefined;
            }
            expect(plan.from).toBe(memo?.cut ?? 0);
            checkCut(messages, plan.from, plan.cut);
            evicted.push(...evictedIndexes(messages, plan.from, plan.cut));
            memo = { cut: plan.cut, summaryTokens: s.summaryTokens };
          }
        }
        // Stretches are disjoint and together cover exactly the prefix before the last cut.
        expect(new Set(evicted).size).toBe(evicted.length);
        expect(evicted).toEqual(evictedIndexes(full, 0, memo?.cut ?? 0));
      }),
      { numRuns: 200 },
    );
  });
});
