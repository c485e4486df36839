import fc from 'fast-check';

import { anyJson, BODIES, text } from './arbitraries';

import { anthropicAdapter } from '../../apps/guardian/src/formats/anthropic.adapter';
import { chatAdapter } from '../../apps/guardian/src/formats/chat.adapter';
import type { FormatAdapter } from '../../apps/guardian/src/formats/format-adapter';
import { responsesAdapter } from '../../apps/guardian/src/formats/responses.adapter';
import { resolveSession } from '../../apps/guardian/src/compaction/request/session';
import { readSessionHeader } from '../../apps/guardian/src/proxy/session-headers';

// A fast-check fuzz of the request parsers guardian runs on every owned request (docs/RELIABILITY.md "Bad input").
// The sidecar would catch a throw and forward the client's bytes (ARCHITECTURE.md#fail-open rule 1), so a throw loses
// nothing; but it is counted as an internal fail-open, and a parser that throws on some shape never compacts that
// shape. The property: whatever JSON arrives, parse answers a conversation or "not mine", rebuild answers JSON, and
// reading answers and usage never throws. Shapes are real requests with any field swapped for any JSON value, plus
// plain arbitrary JSON. 300 runs per property in `npm test`, 20,000 in the long tier.

const RUNS = process.env.LONG === '1' ? 20_000 : 300;
const ADAPTERS: FormatAdapter[] = [chatAdapter, anthropicAdapter, responsesAdapter];

describe('the request parsers under arbitrary JSON', () => {
  it.each(ADAPTERS.map((a) => [a.route, a] as const))(
    '%s: parse and rebuild never throw',
    (_route, adapter) => {
      let parsed = 0;
      fc.assert(
        fc.property(
          BODIES[adapter.route]!,
          fc.boolean(),
          fc.array(fc.nat(), { maxLength: 8 }),
          text,
          (json, countTools, keep, block) => {
            const conv = adapter.parse(json, { countTools });
            if (conv === undefined) return;
            parsed += 1;
            expect(conv.messages.length).toBe(conv.items.length);
            expect(Number.isFinite(conv.fixedChars)).toBe(true);
            const indices = keep.filter((i) => i < conv.messages.length);
            const rebuilt = adapter.rebuild(conv, { keep: indices, summaryBlock: block || undefined });
            expect(typeof JSON.stringify(rebuilt)).toBe('string');
          },
        ),
        { numRuns: RUNS },
      );
      // The fuzz reaches past the "not mine" answer: a good share of the shapes are parsed and rebuilt.
      expect(parsed).toBeGreaterThan(RUNS / 20);
    },
  );

  it.each(ADAPTERS.map((a) => [a.route, a] as const))(
    '%s: reading answers and SSE events never throws',
    (_route, adapter) => {
      fc.assert(
        fc.property(anyJson, (payload) => {
          const into = { toolNames: [] as string[] };
          adapter.observe(payload, into);
          adapter.summaryText(payload);
          expect(Array.isArray(into.toolNames)).toBe(true);
        }),
        { numRuns: RUNS },
      );
    },
  );

  it('the session key: any header value, model and text give a hash, never the raw value in it', () => {
    fc.assert(
      fc.property(
        // The header's separate lines as Node hands them over (`headersDistinct`), or none.
        fc.oneof(fc.array(fc.string({ maxLength: 600 }), { maxLength: 3 }), fc.constant(undefined)),
        fc.string(),
        fc.string(),
        (lines, model, first) => {
          const s = resolveSession(
            readSessionHeader(lines),
            model,
            [{ role: 'user', text: first, chars: first.length, pinnable: true }] as never,
            '',
          );
          expect(s.hash).toMatch(/^[0-9a-f]{64}$/);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
