import fc from 'fast-check';

import {
  plantedLedger,
  simulate,
  type SimRequest,
  type SimSettings,
  type SimTurn,
} from '../../../test/support/compaction-sim';
import { allowedCuts } from './cuts';
import { MESSAGE_OVERHEAD_CHARS, messageTokens, tokensForChars } from './estimate';
import { blockTokens, newestTyped, SPILL_PREVIEW_TOKENS } from './rebuild';
import { spillReserveChars } from './spill';
import { MAX_BLOCK_SPANS } from './summary-block';
import { summaryMaxChars } from './summary-prompt';
import type { NeutralMessage } from './types';

/**
 * The rebuild policy's invariants (issue 11, ARCHITECTURE.md#compaction) over random growing sessions: user turns
 * with pins and big pastes, tool calls answered out of order, mid-conversation system messages. Each session is sent
 * turn by turn with a memo of sticky cuts and a summariser that writes summaries of any length, as the engine does,
 * without I/O (test/support/compaction-sim.ts). test/compaction/rebuild-recordings.spec.ts runs the same simulation
 * over the real clients' shapes through the format adapters.
 */
type Op =
  | { kind: 'user'; words: number; pin: boolean; paste: boolean }
  | { kind: 'rule'; words: number }
  | { kind: 'assistant'; words: number }
  | { kind: 'system'; words: number }
  | { kind: 'calls'; count: number }
  | { kind: 'result'; pick: number; words: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('user' as const),
      words: fc.integer({ min: 3, max: 120 }),
      pin: fc.boolean(),
      paste: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('assistant' as const), words: fc.integer({ min: 2, max: 80 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('rule' as const), words: fc.integer({ min: 0, max: 40 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('system' as const), words: fc.integer({ min: 2, max: 20 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('calls' as const), count: fc.integer({ min: 1, max: 3 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('result' as const),
      pick: fc.nat(),
      words: fc.integer({ min: 2, max: 400 }),
    }),
  },
);

/** The standing instruction a `rule` op types at message `i`: RULE-<i> names it. */
const ruleText = (i: number): string => `From now on, never merge branch ${i} without the RULE-${i} review.`;
const RULE = /From now on, never merge branch \d+ without the RULE-\d+ review\./g;

function text(words: number, seed: number): string {
  const w = ['queue', 'ledger', 'retry', 'schema', 'export', 'cursor'];
  return Array.from({ length: words }, (_, i) => w[(i * 5 + seed) % w.length]).join(' ');
}

function message(
  role: NeutralMessage['role'],
  body: string,
  extra: Partial<NeutralMessage> = {},
): NeutralMessage {
  return {
    role,
    text: body,
    chars: body.length,
    callIds: [],
    resultIds: [],
    toolCalls: [],
    userTyped: role === 'user',
    spillable: role !== 'system',
    digest: '',
    ...extra,
  };
}

function build(ops: readonly Op[]): NeutralMessage[] {
  const out: NeutralMessage[] = [message('system', `You are careful. ${text(30, 1)}`)];
  const pending: string[] = [];
  let calls = 0;
  for (const o of ops) {
    const i = out.length;
    if (o.kind === 'user') {
      const pin = o.pin ? `Remember this: the key for step ${i} is FACT-${i}-OK.\n` : '';
      // A paste is a log: many lines, so a spill cuts at line boundaries.
      const body = o.paste
        ? Array.from({ length: o.words }, (_, k) => `log ${k} ${text(12, k)}`).join('\n')
        : text(o.words, i);
      out.push(message('user', `${pin}${body}`));
    } else if (o.kind === 'rule') {
      // A standing instruction the user typed (ADR 0012), with a marker the test can find in what goes out.
      out.push(message('user', `${text(o.words, i)}\n${ruleText(i)}`.trim()));
    } else if (o.kind === 'assistant' || o.kind === 'system') {
      out.push(message(o.kind, text(o.words, i)));
    } else if (o.kind === 'calls') {
      const ids = Array.from({ length: o.count }, () => `call_${calls++}`);
      pending.push(...ids);
      out.push(
        message('assistant', '', {
          callIds: ids,
          toolCalls: ids.map(() => ({ name: 'shell', args: '{"cmd":"ls"}' })),
          chars: 20 * ids.length,
          spillable: false,
        }),
      );
    } else if (pending.length > 0) {
      const [id = ''] = pending.splice(o.pick % pending.length, 1);
      out.push(message('tool', text(o.words, i), { resultIds: [id], userTyped: false }));
    }
  }
  return out;
}

interface Settings extends SimSettings {
  fixedChars: number;
}

const settings: fc.Arbitrary<Settings> = fc.record({
  window: fc.integer({ min: 1200, max: 12000 }),
  reserve: fc.integer({ min: 100, max: 2000 }),
  fraction: fc.double({ min: 0.05, max: 0.5, noNaN: true }),
  fixedChars: fc.integer({ min: 0, max: 800 }),
  pinMaxChars: fc.constantFrom(0, 300, 1600),
  ledgerMaxChars: fc.constantFrom(0, 150, 1200),
  charsPerToken: fc.constantFrom(1, 2.5, 3.5),
  summaryChars: fc.integer({ min: 40, max: 20000 }),
});

/**
 * Sessions where the user keeps typing rules into a small window: a full ledger is a large share of the budget, so
 * its shedding (the last measure) is reached, not only its carrying.
 */
const ruleHeavy: fc.Arbitrary<[Op[], Settings]> = fc.tuple(
  fc.array(
    fc.oneof(
      { weight: 3, arbitrary: op },
      { weight: 2, arbitrary: fc.constant<Op>({ kind: 'rule', words: 0 }) },
    ),
    {
      minLength: 10,
      maxLength: 70,
    },
  ),
  fc.record({
    window: fc.integer({ min: 1200, max: 4000 }),
    reserve: fc.integer({ min: 100, max: 600 }),
    fraction: fc.double({ min: 0.05, max: 0.5, noNaN: true }),
    fixedChars: fc.integer({ min: 0, max: 800 }),
    pinMaxChars: fc.constantFrom(0, 300),
    ledgerMaxChars: fc.constant(1200),
    charsPerToken: fc.constant(1),
    summaryChars: fc.integer({ min: 40, max: 2000 }),
  }),
);

const sessions = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(fc.array(op, { minLength: 4, maxLength: 70 }), settings) },
  { weight: 1, arbitrary: ruleHeavy },
);

type Turn = SimTurn;

/** Sends every prefix that ends at a user or tool message, as a client does, and returns what each turn forwarded. */
function run(full: readonly NeutralMessage[], s: Settings): Turn[] {
  const requests: SimRequest[] = [];
  for (let len = 2; len <= full.length; len++) {
    const last = full[len - 1]!;
    if (last.role === 'user' || last.role === 'tool')
      requests.push({ messages: full.slice(0, len), fixedChars: s.fixedChars });
  }
  return simulate(requests, s);
}

const PROPERTY_RUNS = { numRuns: 150 };
/** The ledger's heading and the line that introduces it: constant, whatever the ledger holds. */
const LEDGER_LINES_CHARS = 300;

/** True for a message the rebuild would cut to a preview: spillable text longer than the preview and its pointer. */
function previewable(t: Turn, i: number): boolean {
  const m = t.messages[i]!;
  if (m.role === 'system' || !m.spillable) return false;
  const c = t.ctx.counter;
  const room = SPILL_PREVIEW_TOKENS + tokensForChars(spillReserveChars(t.ctx.pinsBy[i] ?? []), c);
  return messageTokens(m, c) > room + tokensForChars(MESSAGE_OVERHEAD_CHARS, c);
}

/** Tokens of the turn's forwarded request with another block in place of the one it carried. */
function withBlock(t: Turn, block: string): number {
  return t.plan!.tokens - blockTokens(t.plan!.block, t.ctx.counter) + blockTokens(block, t.ctx.counter);
}

/** Every older paste of the kept tail was cut to its preview (the measure before any shedding). */
function expectOlderPastesCut(t: Turn): void {
  const newest = newestTyped(t.messages, t.plan!.cut);
  const spilled = new Set(t.plan!.spills.map((x) => x.index));
  for (const i of t.plan!.keep) if (i !== newest && previewable(t, i)) expect(spilled.has(i)).toBe(true);
}

describe('the rebuild policy over random growing sessions', () => {
  it('never forwards more than the client sent, and never splits a tool call from its results', () => {
    fc.assert(
      fc.property(sessions, ([ops, s]) => {
        for (const t of run(build(ops), s)) {
          expect(t.tokens).toBeLessThanOrEqual(t.requestTokens);
          if (!t.plan) continue;
          const kept = new Set(t.plan.keep);
          t.messages.forEach((m, i) => {
            for (const id of m.resultIds) {
              const call = t.messages.findIndex((c) => c.callIds.includes(id));
              if (call !== -1) expect(kept.has(call)).toBe(kept.has(i));
            }
          });
          // The kept tail starts with a user message after a cut (every format's ordering rules rest on it).
          const first = t.plan.keep.find((i) => t.messages[i]!.role !== 'system');
          if (t.plan.cut > 0) expect(t.messages[first!]!.role).toBe('user');
        }
      }),
      PROPERTY_RUNS,
    );
  });

  it('carries every pin, shedding one only when every other measure is spent and the pins are the excess', () => {
    fc.assert(
      fc.property(sessions, ([ops, s]) => {
        for (const t of run(build(ops), s)) {
          if (!t.plan) continue;
          // Pins in kept messages travel in them, even when they are spilled.
          for (const i of t.plan.keep)
            if (s.pinMaxChars > 0) for (const pin of t.ctx.pinsBy[i] ?? []) expect(t.text).toContain(pin);
          if (!t.plan.block || !t.input) continue;
          const carried = t.plan.pins;
          for (const pin of carried) expect(t.text).toContain(pin);
          const shed = t.input.pins.length - carried.length;
          if (shed === 0) continue;
          // Shed: the whole ledger went first ...
          expect(t.plan.ledger).toEqual([]);
          // ... every older paste was already cut ...
          expectOlderPastesCut(t);
          // ... the request fits without any pin or ledger entry (they were the excess) ...
          expect(withBlock(t, t.input.renderBlock!([], []))).toBeLessThanOrEqual(t.ctx.budget.budget);
          // ... and with the last pin shed put back, the request would not fit.
          const back = t.input.renderBlock!(t.input.pins.slice(shed - 1), []);
          expect(withBlock(t, back)).toBeGreaterThan(t.ctx.budget.budget);
        }
      }),
      PROPERTY_RUNS,
    );
  });

  it('carries every standing instruction of the evicted messages (newest first within the cap) unless shed, before any pin', () => {
    const reached = { carried: 0, capped: 0, shed: 0 };
    fc.assert(
      fc.property(sessions, ([ops, s]) => {
        for (const t of run(build(ops), s)) {
          if (!t.plan?.block || !t.input) continue;
          // The ledger the block may carry is exactly the instructions typed before the cut, the newest that fit.
          const expected =
            s.ledgerMaxChars > 0 ? plantedLedger(t.messages, t.plan.cut, RULE, s.ledgerMaxChars) : [];
          expect(t.input.ledger).toEqual(expected);
          if (t.plan.ledger.length > 0) reached.carried += 1;
          if (expected.length < plantedLedger(t.messages, t.plan.cut, RULE, Infinity).length)
            reached.capped += 1;
          // An instruction typed after the cut travels in its own message, never in the ledger.
          for (const entry of t.input.ledger ?? [])
            expect(t.plan.keep.every((i) => !t.messages[i]!.text.includes(entry))).toBe(true);
          for (const entry of t.plan.ledger) expect(t.text).toContain(entry);
          const shed = (t.input.ledger?.length ?? 0) - t.plan.ledger.length;
          if (shed === 0) continue;
          reached.shed += 1;
          // Shed only as the last measure, and the oldest first: what is carried is the newest of them.
          expect(t.plan.ledger).toEqual(t.input.ledger!.slice(shed));
          expectOlderPastesCut(t);
          expect(withBlock(t, t.input.renderBlock!([], []))).toBeLessThanOrEqual(t.ctx.budget.budget);
          if (t.plan.pins.length < t.input.pins.length) continue; // the pin property above covers that case
          // No pin was shed, and with the last ledger entry shed put back (every pin in), the request would not fit.
          const back = t.input.renderBlock!(t.input.pins, t.input.ledger!.slice(shed - 1));
          expect(withBlock(t, back)).toBeGreaterThan(t.ctx.budget.budget);
        }
      }),
      PROPERTY_RUNS,
    );
    // The runs reached each case: carried, dropped by the cap, shed (a property that never sheds proves nothing).
    expect(reached.carried).toBeGreaterThan(0);
    expect(reached.capped).toBeGreaterThan(0);
    expect(reached.shed).toBeGreaterThan(0);
  });

  it('takes a deeper cut before any spill, and spills older pastes before newer ones', () => {
    fc.assert(
      fc.property(sessions, ([ops, s]) => {
        for (const t of run(build(ops), s)) {
          if (!t.plan || t.plan.spills.length === 0) continue;
          const allowed = allowedCuts(t.messages);
          if (t.plan.cut > 0) expect(allowed.some((ok, c) => ok && c > t.plan!.cut)).toBe(false);
          const newest = newestTyped(t.messages, t.plan.cut);
          const spilled = t.plan.spills.map((x) => x.index);
          const older = t.plan.keep.filter((i) => i !== newest && previewable(t, i));
          // The spilled older pastes are a prefix of the older pastes, oldest first.
          const olderSpilled = spilled.filter((i) => i !== newest);
          expect(olderSpilled).toEqual(older.slice(0, olderSpilled.length));
          // The newest typed message is cut only after every older paste.
          if (newest !== undefined && spilled.includes(newest)) expect(olderSpilled).toEqual(older);
        }
      }),
      PROPERTY_RUNS,
    );
  });

  it('adds a bounded block whatever the session length, identical on every turn that reuses its cut', () => {
    fc.assert(
      fc.property(sessions, ([ops, s]) => {
        const turns = run(build(ops), s);
        let previous: Turn | undefined;
        for (const t of turns) {
          const block = t.plan?.block;
          if (block) {
            const bound =
              1200 +
              summaryMaxChars(t.ctx.budget, t.ctx.counter) +
              MAX_BLOCK_SPANS * 40 +
              s.pinMaxChars +
              64 * 3 +
              s.ledgerMaxChars +
              LEDGER_LINES_CHARS;
            expect(block.length).toBeLessThanOrEqual(bound);
            // Prefix stability: the same cut reused places the same bytes before the kept tail, unless a pin had to
            // be shed (the last measure, when a request over budget has no later cut to take).
            const whole = (x: Turn): boolean =>
              x.plan!.pins.length === x.input!.pins.length &&
              x.plan!.ledger.length === (x.input!.ledger?.length ?? 0);
            if (t.action === 'reuse' && previous?.plan?.cut === t.plan!.cut && previous.plan.block)
              if (whole(t) && whole(previous)) expect(block).toBe(previous.plan.block);
          }
          if (t.plan) previous = t;
        }
      }),
      PROPERTY_RUNS,
    );
  });
});
