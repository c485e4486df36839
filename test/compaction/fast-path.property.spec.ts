import fc from 'fast-check';

import { Calibration, requestChars, tokensForChars, worstTokensForBytes } from '@guardian/compaction';
import { ownerHash } from '@guardian/archive';
import { UpstreamClient } from '@guardian/upstream';

import { GuardianConfig } from '../../apps/guardian/src/config/guardian-config';
import { FastPath } from '../../apps/guardian/src/compaction/request/fast-path';
import { anthropicAdapter } from '../../apps/guardian/src/formats/anthropic.adapter';
import { chatAdapter } from '../../apps/guardian/src/formats/chat.adapter';
import type { FormatAdapter } from '../../apps/guardian/src/formats/format-adapter';
import { responsesAdapter } from '../../apps/guardian/src/formats/responses.adapter';
import { RequestCounter } from '../../apps/guardian/src/compaction/request/request-counter';
import { sessionOfConversation } from '../../apps/guardian/src/compaction/request/session';
import { readSessionHeader } from '../../apps/guardian/src/proxy/session-headers';
import { usageCandidate } from '../../apps/guardian/src/compaction/request/usage-selection';
import { WindowService } from '../../apps/guardian/src/compaction/request/window.service';
import type { PrepareInput } from '../../apps/guardian/src/compaction/handoff';
import type { OwnedRoute } from '../../apps/guardian/src/formats/owned-route';
import { GuardianState } from '../../apps/guardian/src/state/guardian-state';
import { BODIES } from '../bad-input/arbitraries';
import { fillSkeleton, loadRecordings, routeOf, type Json } from '../support/recordings';

/**
 * The fast path (ADR 0013) decides a request without parsing it. Whatever it decides must be what the full path
 * would have done with the same bytes: the same session, the same usage facts, and no estimate the full path could
 * make above the size bound. Over random request shapes of each route (valid, broken in one spot, any JSON) and the
 * five real clients' recorded requests.
 */
const ADAPTERS: Record<OwnedRoute, FormatAdapter> = {
  chat: chatAdapter,
  messages: anthropicAdapter,
  responses: responsesAdapter,
};

function fastPath(): FastPath {
  const config = GuardianConfig.fromEnv(
    { GUARDIAN_NUM_CTX: '100000000', GUARDIAN_CALIBRATE: '0', GUARDIAN_DATA_DIR: '/nonexistent' },
    { version: 'test', home: '/nonexistent' },
  );
  // Never called: the window is configured, so nothing is detected.
  const upstream = new UpstreamClient({
    origin: 'http://127.0.0.1:9',
    timeoutSeconds: 1,
    connectTimeoutSeconds: 1,
  });
  return new FastPath(
    config,
    new WindowService(config, upstream, new GuardianState()),
    new RequestCounter(config, upstream),
  );
}

/** Team mode's owner, for half the runs: the session is scoped to it on both paths. */
type Owner = { owner: string; ownerHash: string } | undefined;
const ALICE: Owner = { owner: 'alice', ownerHash: ownerHash('alice') };

function input(route: OwnedRoute, body: Buffer, header?: string, owner?: Owner): PrepareInput {
  return {
    route,
    url: '/v1/x',
    headers: {},
    upstreamHeaders: {},
    body,
    sessionHeader: readSessionHeader(header === undefined ? undefined : [header]),
    ...(owner ? { owner } : {}),
    signal: new AbortController().signal,
    reqId: 'test',
  };
}

/** What the full path makes of the same bytes, when it understands them. */
function fullPath(route: OwnedRoute, body: Buffer, header?: string, owner?: Owner) {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  const conv = ADAPTERS[route].parse(json, { countTools: true });
  if (!conv) return undefined;
  const session = sessionOfConversation(
    readSessionHeader(header === undefined ? undefined : [header]),
    conv,
    owner,
  );
  const chars = requestChars(conv.messages, conv.fixedChars);
  const worstEstimate = tokensForChars(chars, { charsPerToken: 3.5, factor: Calibration.MAX_FACTOR });
  return { session, candidate: usageCandidate(conv.json), worstEstimate };
}

function agree(fast: FastPath, route: OwnedRoute, body: Buffer, header?: string, owner?: Owner): boolean {
  const decided = fast.decide(input(route, body, header, owner), ADAPTERS[route]);
  if (!decided) return false;
  // The same bytes again: a derived session now comes from the remembered leading bytes.
  expect(fast.decide(input(route, body, header, owner), ADAPTERS[route])?.session).toEqual(decided.session);
  const full = fullPath(route, body, header, owner);
  // A body the full path cannot read is forwarded unchanged by both paths; only the bookkeeping may differ.
  if (!full) return true;
  expect(decided.session.key).toBe(full.session.key);
  expect(decided.session.hash).toBe(full.session.hash);
  expect(decided.facts.ownerHash).toBe(full.session.ownerHash);
  expect(decided.facts.candidate).toEqual(full.candidate);
  expect(decided.decision.body).toBeUndefined();
  expect(full.worstEstimate).toBeLessThanOrEqual(
    worstTokensForBytes(body.length, 3.5, Calibration.MAX_FACTOR),
  );
  return true;
}

/** Well-formed requests whose system text may come first, later, at the top level, or not at all. */
const words = fc.string({ maxLength: 40 });
const parts = fc.oneof(
  words,
  fc.array(fc.record({ type: fc.constant('text'), text: words }), { minLength: 1, maxLength: 3 }),
);
const extras = {
  tools: fc.array(fc.record({ type: fc.constant('function'), name: words }), { maxLength: 3 }),
  max_tokens: fc.oneof(fc.nat(100), fc.constant(null)),
  max_output_tokens: fc.nat(100),
  stream: fc.boolean(),
};
const SHAPED: Record<OwnedRoute, fc.Arbitrary<unknown>> = {
  chat: fc.record(
    {
      model: words,
      messages: fc.array(
        fc.record({ role: fc.constantFrom('system', 'developer', 'user', 'assistant'), content: parts }),
        { minLength: 1, maxLength: 6 },
      ),
      ...extras,
    },
    { requiredKeys: ['model', 'messages'] },
  ),
  messages: fc.record(
    {
      model: words,
      system: fc.oneof(
        words,
        fc.array(fc.record({ type: fc.constant('text'), text: words }), { maxLength: 2 }),
      ),
      messages: fc.array(fc.record({ role: fc.constantFrom('user', 'assistant'), content: parts }), {
        minLength: 1,
        maxLength: 6,
      }),
      ...extras,
    },
    { requiredKeys: ['model', 'messages'] },
  ),
  responses: fc.record(
    {
      model: words,
      instructions: words,
      input: fc.array(
        fc.record({
          role: fc.constantFrom('system', 'developer', 'user', 'assistant'),
          content: fc.oneof(words, fc.array(fc.record({ type: fc.constant('input_text'), text: words }))),
        }),
        { minLength: 1, maxLength: 6 },
      ),
      ...extras,
    },
    { requiredKeys: ['model', 'input'] },
  ),
};

describe('the fast path decides as the full path would', () => {
  const fast = fastPath();

  it.each(['chat', 'messages', 'responses'] as const)(
    '%s: random request shapes, with and without a header, with and without an owner',
    (route) => {
      let decided = 0;
      fc.assert(
        fc.property(
          BODIES[route]!,
          fc.option(fc.string({ minLength: 1, maxLength: 20 })),
          fc.constantFrom(undefined, ALICE),
          (body, header, owner) => {
            const bytes = Buffer.from(JSON.stringify(body) ?? 'null');
            if (agree(fast, route, bytes, header ?? undefined, owner)) decided += 1;
          },
        ),
        { numRuns: 400 },
      );
      // The property says something only if the fast path took a good share of them.
      expect(decided).toBeGreaterThan(40);
    },
  );

  it.each(['chat', 'messages', 'responses'] as const)(
    '%s: system text first, later, on top or absent',
    (route) => {
      let decided = 0;
      fc.assert(
        fc.property(
          SHAPED[route],
          fc.option(fc.string({ minLength: 1, maxLength: 20 })),
          fc.constantFrom(undefined, ALICE),
          (body, header, owner) => {
            if (agree(fast, route, Buffer.from(JSON.stringify(body)), header ?? undefined, owner))
              decided += 1;
          },
        ),
        { numRuns: 400 },
      );
      expect(decided).toBeGreaterThan(200);
    },
  );

  it('the five recorded clients: every request, with and without a header', () => {
    let decided = 0;
    let total = 0;
    for (const rec of loadRecordings()) {
      for (const r of rec.requests) {
        if (r.method !== 'POST' || r.body_skeleton === undefined) continue;
        const route = routeOf(r.route);
        const body = Buffer.from(JSON.stringify(fillSkeleton(r.body_skeleton) as Json));
        for (const header of [undefined, 'dev-1']) {
          for (const owner of [undefined, ALICE]) {
            total += 1;
            if (agree(fast, route, body, header, owner)) decided += 1;
          }
        }
      }
    }
    expect(total).toBeGreaterThan(10);
    expect(decided).toBeGreaterThan(total / 2);
  });
});
