import { fillSkeleton, loadRecordings, type Json } from '../support/recordings';
import { startStack, type Stack } from '../support/stack';

/**
 * Real client request shapes, recorded by the works-with runner (test/works-with/recordings/<client>-<version>.json:
 * every text replaced by `<text:LENGTH>`), replayed through the sidecar with filler of the same lengths (issue 5: the
 * fixtures come from recordings of the real clients, named with the client version). The shaped fixtures in
 * test/formats/fixtures stay for what these two-turn recordings do not hold: tool pairs, thinking blocks, long sessions.
 */
const recordings = loadRecordings();

/** Tool results whose call is not earlier in the same list, in any of the three formats. */
function orphanResults(items: unknown[]): string[] {
  const calls = new Set<string>();
  const orphans: string[] = [];
  const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
  for (const item of items.filter(isObj)) {
    for (const c of Array.isArray(item.tool_calls) ? item.tool_calls.filter(isObj) : [])
      calls.add(String(c.id));
    if (item.type === 'function_call') calls.add(String(item.call_id));
    for (const b of Array.isArray(item.content) ? item.content.filter(isObj) : []) {
      if (b.type === 'tool_use') calls.add(String(b.id));
      if (b.type === 'tool_result' && !calls.has(String(b.tool_use_id))) orphans.push(String(b.tool_use_id));
    }
    if (item.role === 'tool' && !calls.has(String(item.tool_call_id)))
      orphans.push(String(item.tool_call_id));
    if (item.type === 'function_call_output' && !calls.has(String(item.call_id)))
      orphans.push(String(item.call_id));
  }
  return orphans;
}

const cases = recordings.flatMap((r) =>
  r.requests
    .map((req, i) => ({ rec: r, req, i }))
    .filter(({ req }) => req.method === 'POST' && req.body_skeleton !== undefined),
);

describe.each([
  ['a window far above the request (nothing to do)', 1_000_000],
  ['the window the works-with run used (compaction or spill)', 8192],
])('recorded client requests replayed through the sidecar, %s', (_label, window) => {
  let stack: Stack;
  let changed = 0;
  beforeAll(async () => {
    stack = await startStack({
      stub: { window: 1_000_000 },
      env: { GUARDIAN_NUM_CTX: String(window), GUARDIAN_RESERVE_OUTPUT: '1024' },
    });
  });
  afterAll(async () => {
    await stack.close();
  });

  it.each(cases.map((c) => [`${c.rec.client} ${c.rec.version}`, c.i, c] as const))(
    '%s request #%i',
    async (_name, _i, c) => {
      stack.stub.reset();
      const body = fillSkeleton(c.req.body_skeleton) as Json;
      const bytes = JSON.stringify(body);
      const query = c.req.query.length ? `?${c.req.query.map((q) => `${q}=true`).join('&')}` : '';
      const res = await fetch(`${stack.guardian.url}${c.req.route}${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer recorded' },
        body: bytes,
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      const sent = stack.stub.requests.filter(
        (r) => !r.isSummary && r.route !== 'window' && r.route !== 'tokenize',
      );
      const last = sent.at(-1)!;
      expect(last.path).toBe(`${c.req.route}${query}`);
      // Anthropic's context_management is applied by guardian and cut from the bytes (docs/native-compaction.md).
      const { context_management: _applied, ...rest } = body;
      const expected = c.req.route.includes('messages') ? JSON.stringify(rest) : bytes;
      if (window >= 1_000_000) {
        expect(last.body.toString('utf8')).toBe(expected);
        return;
      }
      if (last.body.toString('utf8') !== expected) changed += 1;
      const forwarded = JSON.parse(last.body.toString('utf8')) as Json;
      // Same top-level fields, tools untouched, no orphaned tool result, and never larger than what the client sent.
      expect(Object.keys(forwarded).sort()).toEqual(Object.keys(JSON.parse(expected) as Json).sort());
      expect(forwarded.tools).toEqual(body.tools);
      const list = (forwarded.messages ?? forwarded.input) as unknown[];
      expect(orphanResults(Array.isArray(list) ? list : [])).toEqual([]);
      const route = c.req.route.includes('messages')
        ? 'messages'
        : c.req.route.includes('responses')
          ? 'responses'
          : 'chat';
      expect(stack.stub.countPrompt(forwarded, route)).toBeLessThanOrEqual(
        stack.stub.countPrompt(body, route),
      );
    },
  );

  it('changed most of the recorded requests only when the window is small (the replay is not a no-op)', () => {
    if (window >= 1_000_000) expect(changed).toBe(0);
    else expect(changed).toBeGreaterThanOrEqual(Math.ceil(cases.length / 2));
  });
});
