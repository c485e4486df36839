import fc from 'fast-check';

import { requestChars } from '@guardian/compaction';

import { anthropicAdapter } from '../../apps/guardian/src/formats/anthropic.adapter';
import { chatAdapter } from '../../apps/guardian/src/formats/chat.adapter';
import type { FormatAdapter, ParsedConversation } from '../../apps/guardian/src/formats/format-adapter';
import { responsesAdapter } from '../../apps/guardian/src/formats/responses.adapter';
import { checkAnthropic, checkResponses, FENCE_TITLE } from '../formats/support/checks';
import { plantedLedger, simulate, type SimSettings } from '../support/compaction-sim';
import {
  assistantItem,
  filler,
  itemsOf,
  loadRecordings,
  openingBody,
  userItem,
  type Json,
  type Route,
} from '../support/recordings';

/**
 * Issue 11: the rebuild policy's invariants over the five real clients' request shapes (their system prompts, tools,
 * instruction items and content kinds, from test/works-with/recordings), grown into random long sessions with pastes,
 * pins and tool calls in each client's own format, and rebuilt through the format adapters, as the engine does. Each
 * forwarded request must obey its API's ordering rules, keep every pin, never be larger than what the client sent, and
 * place the same bytes before the kept tail on every turn that reuses a cut.
 */
const ADAPTERS: Record<Route, FormatAdapter> = {
  chat: chatAdapter,
  messages: anthropicAdapter,
  responses: responsesAdapter,
};

type Step =
  | { kind: 'user'; chars: number; pin: boolean }
  | { kind: 'rule'; chars: number }
  | { kind: 'tools'; calls: number; chars: number }
  | { kind: 'assistant'; chars: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('user' as const),
      chars: fc.oneof(fc.integer({ min: 20, max: 600 }), fc.integer({ min: 4000, max: 20000 })),
      pin: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('tools' as const),
      calls: fc.integer({ min: 1, max: 3 }),
      chars: fc.integer({ min: 20, max: 6000 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('rule' as const), chars: fc.integer({ min: 0, max: 300 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('assistant' as const),
      chars: fc.integer({ min: 10, max: 800 }),
    }),
  },
);

const settings: fc.Arbitrary<SimSettings> = fc.record({
  window: fc.constantFrom(8192, 16384, 32768),
  reserve: fc.constantFrom(1024, 4096, 8192),
  fraction: fc.constantFrom(0.1, 0.2, 0.4),
  pinMaxChars: fc.constantFrom(0, 1600),
  ledgerMaxChars: fc.constantFrom(0, 200, 1200),
  statedMaxChars: fc.constantFrom(0, 1200),
  charsPerToken: fc.constant(3.5),
  summaryChars: fc.integer({ min: 40, max: 9000 }),
});

/** The calls and their results in the route's own shapes (results right after their calls, as every API wants). */
function toolItems(route: Route, n: number, calls: number, chars: number): Json[] {
  const ids = Array.from({ length: calls }, (_, k) => `call_${n}_${k}`);
  const out = filler(chars, n);
  if (route === 'chat')
    return [
      {
        role: 'assistant',
        content: null,
        tool_calls: ids.map((id) => ({
          id,
          type: 'function',
          function: { name: 'shell', arguments: '{"cmd":"ls"}' },
        })),
      },
      ...ids.map((id) => ({ role: 'tool', tool_call_id: id, content: out })),
    ];
  if (route === 'messages')
    return [
      {
        role: 'assistant',
        content: ids.map((id) => ({ type: 'tool_use', id, name: 'shell', input: { cmd: 'ls' } })),
      },
      { role: 'user', content: ids.map((id) => ({ type: 'tool_result', tool_use_id: id, content: out })) },
    ];
  return ids.flatMap((id) => [
    { type: 'function_call', call_id: id, name: 'shell', arguments: '{"cmd":"ls"}' },
    { type: 'function_call_output', call_id: id, output: out },
  ]);
}

/** A standing instruction the user types at step `n` (ADR 0012); RULE-<n> names it. */
const rule = (n: number): string => `Never run the step ${n} migration without the RULE-${n} dry run.`;
const RULE = /Never run the step \d+ migration without the RULE-\d+ dry run\./g;

/** The client's requests, turn by turn: every step that ends in a user message or a tool result is one request. */
function session(opening: { route: Route; body: Json }, steps: readonly Step[]): Json[] {
  const key = Array.isArray(opening.body.messages) ? 'messages' : 'input';
  let items = itemsOf(opening.body);
  const bodies: Json[] = [{ ...opening.body }];
  steps.forEach((st, n) => {
    if (st.kind === 'assistant') {
      items = [...items, assistantItem(opening.route, filler(st.chars, n))];
      return;
    }
    if (st.kind === 'tools') items = [...items, ...toolItems(opening.route, n, st.calls, st.chars)];
    else if (st.kind === 'rule')
      items = [...items, userItem(opening.route, `${filler(st.chars, n)}\n${rule(n)}`)];
    else {
      const pin = st.pin ? `Remember this: the value for step ${n} is FACT-${n}-KEEP. ` : '';
      items = [...items, userItem(opening.route, `${pin}${filler(st.chars, n)}`)];
    }
    bodies.push({ ...opening.body, [key]: items });
  });
  return bodies;
}

/** Chat: the client's system messages only (ours merged into the first), the kept tail from a user message. */
function checkChat(sent: Json, forwarded: Json): string[] {
  const problems: string[] = [];
  const sys = (b: Json) => itemsOf(b).filter((m) => m.role === 'system' || m.role === 'developer');
  const fwd = itemsOf(forwarded);
  const compacted = JSON.stringify(fwd).includes(FENCE_TITLE);
  const extra = sys(sent)[0] === itemsOf(sent)[0] ? 0 : 1;
  if (sys(forwarded).length > sys(sent).length + (compacted ? extra : 0))
    problems.push('more system messages than sent');
  if (compacted && !JSON.stringify(fwd[0]).includes(FENCE_TITLE))
    problems.push('summary not in the first message');
  const ids = new Set<string>();
  for (const m of fwd) {
    for (const c of Array.isArray(m.tool_calls) ? (m.tool_calls as Json[]) : []) ids.add(String(c.id));
    if (m.role === 'tool' && !ids.has(String(m.tool_call_id)))
      problems.push(`tool result ${String(m.tool_call_id)} without its call`);
  }
  const first = fwd.find((m) => m.role !== 'system' && m.role !== 'developer');
  if (compacted && first?.role !== 'user') problems.push('the kept tail does not start at a user message');
  return problems;
}

function problemsOf(route: Route, sent: Json, forwarded: Json): string[] {
  if (route === 'messages') return checkAnthropic(sent, forwarded).problems;
  if (route === 'responses') return checkResponses(sent, forwarded).problems;
  return checkChat(sent, forwarded);
}

/** Everything before the kept tail of a forwarded request: top-level system and instructions, and the leading items. */
function prefixOf(forwarded: Json, tailLength: number): string {
  const items = itemsOf(forwarded);
  return JSON.stringify([
    forwarded.system,
    forwarded.instructions,
    items.slice(0, items.length - tailLength),
  ]);
}

const recordings = loadRecordings();
const FC_SEED = Number(process.env.FC_SEED ?? 20261201);

describe.each(recordings.map((r) => [`${r.client} ${r.version}`, r] as const))(
  'the rebuild policy over %s-shaped sessions, through its format adapter',
  (_name, rec) => {
    it('forwards valid requests that keep every pin, never grow, and keep the prefix on reused cuts', () => {
      const opening = openingBody(rec, 'Let us start. Remember this: the deploy key is FACT-ZEBRA-7431.');
      const adapter = ADAPTERS[opening.route];
      const seen = { compacted: 0, reused: 0, spilled: 0, ledger: 0 };
      fc.assert(
        fc.property(fc.array(step, { minLength: 3, maxLength: 24 }), settings, (steps, s) => {
          const bodies = session(opening, steps);
          const convs = bodies.map((b) => adapter.parse(b, { countTools: true })!);
          const turns = simulate(
            convs.map((c) => ({ messages: c.messages, fixedChars: c.fixedChars })),
            s,
          );
          let previous: { cut: number; prefix: string; whole: boolean } | undefined;
          turns.forEach((t, i) => {
            const conv: ParsedConversation = convs[i]!;
            if (!t.plan) return;
            if (t.plan.cut > 0) seen.compacted += 1;
            if (t.action === 'reuse') seen.reused += 1;
            if (t.plan.spills.length > 0) seen.spilled += 1;
            const json = adapter.rebuild(conv, {
              keep: t.plan.keep,
              summaryBlock: t.plan.block,
              replaceText: t.replaced,
            });
            expect({ turn: i, problems: problemsOf(opening.route, bodies[i]!, json) }).toEqual({
              turn: i,
              problems: [],
            });
            // Never larger than what the client sent, by the same count, of the request as it goes out.
            const out = adapter.parse(json, { countTools: true })!;
            expect(requestChars(out.messages, out.fixedChars)).toBeLessThanOrEqual(
              requestChars(conv.messages, conv.fixedChars),
            );
            // Every pin the user typed is in it, unless one had to be shed (every other measure spent: the policy's
            // own property test, libs/compaction/src/rebuild.property.spec.ts, checks when that may happen).
            const text = JSON.stringify(json);
            const shed = t.input!.pins.length - t.plan.pins.length;
            if (shed === 0 && s.pinMaxChars > 0) expect(text).toContain('FACT-ZEBRA-7431');
            for (const pin of t.plan.pins) expect(text).toContain(JSON.stringify(pin).slice(1, -1));
            // The user's standing instructions from the evicted messages, the newest that fit the cap, are in it
            // verbatim unless shed (the policy's own property test checks when that may happen).
            const ledger =
              s.ledgerMaxChars > 0 ? plantedLedger(conv.messages, t.plan.cut, RULE, s.ledgerMaxChars) : [];
            if (t.plan.cut > 0) expect(t.input!.ledger).toEqual(ledger);
            if (ledger.length > 0) seen.ledger += 1;
            for (const entry of t.plan.ledger) expect(text).toContain(entry);
            const ledgerShed = (t.input!.ledger?.length ?? 0) - t.plan.ledger.length;
            // Prefix stability: a reused cut places the same bytes before the kept tail.
            const tail = conv.messages.length - t.plan.cut;
            const now = {
              cut: t.plan.cut,
              prefix: prefixOf(json, tail),
              whole:
                shed === 0 && ledgerShed === 0 && (t.input!.stated?.length ?? 0) === t.plan.stated.length,
            };
            if (
              t.action === 'reuse' &&
              previous?.cut === now.cut &&
              previous.whole &&
              now.whole &&
              t.plan.cut > 0
            )
              expect(now.prefix).toBe(previous.prefix);
            previous = now;
          });
        }),
        // A fixed seed: the check below, that the runs reached every measure, must not depend on the draw (one random
        // draw in a few dozen never spilled). FC_SEED explores other draws; a failure prints the seed to replay.
        { numRuns: 40, seed: FC_SEED },
      );
      // The runs reached every measure (a property that never compacts proves nothing).
      expect(seen.compacted).toBeGreaterThan(0);
      expect(seen.reused).toBeGreaterThan(0);
      expect(seen.spilled).toBeGreaterThan(0);
      expect(seen.ledger).toBeGreaterThan(0);
    });
  },
);
