import fc from 'fast-check';

import { buildSession, type SessionOp } from '../../../test/support/neutral-sessions';
import { nextBlockSource, rebuildInput, type BlockContext, type BlockSource } from './block-plan';
import { allowedCuts } from './cuts';
import { pinsByMessage } from './pins';
import { chooseCut, chooseMemo, planCompaction, type PlanInput } from './planner';
import { planRebuild } from './rebuild';
import type { BudgetInfo, Counter, NeutralMessage } from './types';

// Issue 16 made a memo-hit turn compute less: the allowed cuts once per request, the block text once for the planner
// and the rebuild. Each is held here to the result computed from scratch, over random sessions.

/** allowedCuts as it was written before issue 16 (the oracle for the loop version). */
function allowedCutsFromScratch(messages: readonly NeutralMessage[]): boolean[] {
  const n = messages.length;
  const allowed: boolean[] = new Array<boolean>(n + 1).fill(true);
  const callAt = new Map<string, number>();
  messages.forEach((m, i) => m.callIds.forEach((id) => callAt.set(id, i)));
  messages.forEach((m, i) => {
    for (const id of m.resultIds) {
      const c = callAt.get(id);
      if (c === undefined || c >= i) continue;
      for (let k = c + 1; k <= i; k++) allowed[k] = false;
    }
  });
  for (let k = 0; k < n; k++) if (messages[k]?.role !== 'user') allowed[k] = false;
  allowed[n] = false;
  const firstEvictable = messages.findIndex((m) => m.role !== 'system');
  for (let k = 0; k <= (firstEvictable === -1 ? n : firstEvictable); k++) allowed[k] = false;
  return allowed;
}

// Sessions with tool calls answered in any order, pins and standing instructions in what the user typed
// (test/support/neutral-sessions.ts).
const chars = fc.integer({ min: 5, max: 600 });
const op: fc.Arbitrary<SessionOp> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constantFrom('user' as const, 'assistant' as const),
      chars,
      pin: fc.boolean(),
      rule: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('system' as const),
      chars,
      pin: fc.boolean(),
      rule: fc.boolean(),
    }),
  },
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

const session = fc
  .tuple(fc.boolean(), fc.array(op, { minLength: 1, maxLength: 80 }))
  .map(([lead, ops]) =>
    buildSession(lead ? [{ kind: 'system', chars: 200, pin: false, rule: false }, ...ops] : ops),
  );

const setting = fc.record({
  window: fc.integer({ min: 400, max: 30_000 }),
  threshold: fc.double({ min: 0.5, max: 0.95, noNaN: true }),
  fraction: fc.double({ min: 0.05, max: 0.6, noNaN: true }),
  keepMessages: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }),
  factor: fc.double({ min: 0.7, max: 1.3, noNaN: true }),
  fixedChars: fc.integer({ min: 0, max: 2000 }),
  pinMaxChars: fc.constantFrom(0, 200, 1600),
  ledgerMaxChars: fc.constantFrom(0, 120, 1200),
  summaryChars: fc.integer({ min: 1, max: 3000 }),
  memoCut: fc.nat(),
  spans: fc.array(fc.constantFrom('r1/0001.json', 'r1/0002.json', 'r2/0001.json'), { maxLength: 20 }),
  deferred: fc.boolean(),
});

type Setting = typeof setting extends fc.Arbitrary<infer T> ? T : never;

function contexts(messages: readonly NeutralMessage[], s: Setting) {
  const counter: Counter = { charsPerToken: 3.5, factor: s.factor };
  const reserve = Math.floor(s.window / 4);
  const budget: BudgetInfo = {
    window: s.window,
    reserve,
    budget: Math.min(Math.floor(s.window * s.threshold), s.window - reserve),
    reserveClamped: false,
  };
  const block: BlockContext = {
    messages,
    fixedChars: s.fixedChars,
    counter,
    budget,
    pinMaxChars: s.pinMaxChars,
    pinsBy: s.pinMaxChars > 0 ? pinsByMessage(messages) : [],
    ledgerMaxChars: s.ledgerMaxChars,
  };
  const source: BlockSource = {
    summary: `${'s'.repeat(s.summaryChars)}\n## Must Keep\n- the port of service 1 is 1001.`,
    cut: messages.length === 0 ? 0 : 1 + (s.memoCut % messages.length),
    spans: s.spans,
    spanTotal: s.spans.length + (s.deferred ? 3 : 0),
    deferred: s.deferred,
    mustKeep: ['the port of service 1 is 1001.', 'a bullet of an older summary'],
  };
  return { counter, budget, block, source };
}

describe('what a memo-hit turn computes once equals what it computed from scratch', () => {
  it('allowedCuts agrees with its earlier form', () => {
    fc.assert(
      fc.property(session, (messages) => {
        expect(allowedCuts(messages)).toEqual(allowedCutsFromScratch(messages));
      }),
      { numRuns: 1000 },
    );
  });

  it('the planner given the allowed cuts plans as it does without them', () => {
    fc.assert(
      fc.property(session, setting, (messages, s) => {
        const { counter, budget, source } = contexts(messages, s);
        const base: Omit<PlanInput, 'memo'> = {
          messages,
          fixedChars: s.fixedChars,
          counter,
          budget,
          keep:
            s.keepMessages === undefined
              ? { fraction: s.fraction }
              : { fraction: s.fraction, messages: s.keepMessages },
          requestTokens: Math.ceil(
            ((s.fixedChars + messages.reduce((n, m) => n + m.chars + 20, 0)) / 3.5) * s.factor,
          ),
          newBlockTokens: (cut) => Math.ceil(cut / 2) + 40,
        };
        const memos = [1, 2, 3].map((k) => ({
          cut: (s.memoCut * k) % (messages.length + 1),
          summaryTokens: 30 * k,
        }));
        const given = { ...base, allowed: allowedCuts(messages) };
        expect(chooseMemo(given, memos)).toEqual(chooseMemo(base, memos));
        const memo = { cut: source.cut, summaryTokens: 50 };
        expect(planCompaction({ ...given, memo })).toEqual(planCompaction({ ...base, memo }));
        expect(planCompaction(given)).toEqual(planCompaction(base));
        for (const from of [0, source.cut]) expect(chooseCut(given, from)).toEqual(chooseCut(base, from));
      }),
      { numRuns: 500 },
    );
  });

  it('a rebuild input whose block the planner weighed first rebuilds as a fresh one', () => {
    fc.assert(
      fc.property(session, setting, fc.boolean(), (messages, s, nextCut) => {
        const { block, source } = contexts(messages, s);
        const around = nextCut ? nextBlockSource(block, source, source.cut) : source;
        const weighed = rebuildInput(block, around);
        // What the planner does: the block with every pin and ledger entry.
        weighed.renderBlock?.(weighed.pins, weighed.ledger ?? []);
        const fresh = rebuildInput(block, around);
        expect(planRebuild(weighed)).toEqual(planRebuild(fresh));
      }),
      { numRuns: 500 },
    );
  });

  it('a block rendered again with other pins or another ledger is rendered anew', () => {
    const list = fc.array(fc.constantFrom('pin a', 'pin b', 'rule c', 'rule d'), { maxLength: 3 });
    fc.assert(
      fc.property(
        session,
        setting,
        fc.array(fc.tuple(list, list), { minLength: 1, maxLength: 6 }),
        (messages, s, calls) => {
          const { block, source } = contexts(messages, s);
          const input = rebuildInput(block, source);
          for (const [pins, ledger] of calls) {
            // One input asked again and again, against a fresh one for each call.
            expect(input.renderBlock?.(pins, ledger)).toBe(
              rebuildInput(block, source).renderBlock?.(pins, ledger),
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
