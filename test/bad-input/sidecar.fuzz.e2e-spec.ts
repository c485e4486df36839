import fc from 'fast-check';

import { startStack, type Stack } from '../support/stack';
import { BODIES } from './arbitraries';

// The same fuzz end to end: arbitrary bodies (and arbitrary bytes) POSTed to the running sidecar on each route it
// reads. The window is large, so nothing compacts and every body must reach the upstream byte for byte, the client
// must get the upstream's status, and no parser may throw (internal fail-open count unchanged).
// 60 bodies per route in `npm test`, 2,000 in the long tier.

const RUNS = process.env.LONG === '1' ? 2000 : 60;
const PATHS = { chat: '/v1/chat/completions', messages: '/v1/messages', responses: '/v1/responses' };

describe('the sidecar under fuzzed request bodies', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ stub: { window: 10_000_000 }, env: { GUARDIAN_NUM_CTX: '10000000' } });
  });
  afterAll(async () => {
    await stack.close();
  });

  const internal = async () =>
    (
      (await (await fetch(`${stack.guardian.url}/guardian/stats`)).json()) as {
        fail_open: { internal: number };
      }
    ).fail_open.internal;

  it.each(Object.entries(PATHS))(
    '%s: forwarded byte for byte, the upstream heard',
    async (route, path) => {
      const bodies = fc.oneof(
        { weight: 4, arbitrary: BODIES[route]!.map((json) => Buffer.from(JSON.stringify(json) ?? 'null')) },
        { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2048 }).map((a) => Buffer.from(a)) },
      );
      const before = await internal();
      await fc.assert(
        fc.asyncProperty(bodies, async (body) => {
          stack.stub.reset();
          const res = await fetch(`${stack.guardian.url}${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          });
          await res.arrayBuffer();
          const upstream = stack.stub.requests.filter((r) => r.route !== 'window' && r.route !== 'tokenize');
          expect(upstream).toHaveLength(1);
          expect(upstream[0]!.body.equals(body)).toBe(true);
          expect(res.status).toBe(upstream[0]!.status);
        }),
        { numRuns: RUNS },
      );
      expect(await internal()).toBe(before);
    },
    // A hang guard: jest's own (15 minutes) for the short run, an hour for LONG's 2,000 runs per route.
    process.env.LONG === '1' ? 3_600_000 : undefined,
  );
});
