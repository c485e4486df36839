import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { fillSkeleton, RECORDINGS_DIR, type Json } from '../support/recordings';
import { inflateTools } from '../works-with/support/recording';

interface Shape {
  method: string;
  route: string;
  body_skeleton?: unknown;
}

interface Case {
  name: string;
  route: string;
  body: Json;
}

const GENERATION = ['/v1/chat/completions', '/v1/messages', '/v1/responses'];
const COMPACTION_ITEMS = ['compaction', 'compaction_trigger', 'compaction_summary', 'context_compaction'];

const read = (dir: string): { file: string; json: Json }[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ file: f, json: JSON.parse(readFileSync(join(dir, f), 'utf8')) as Json }));

function casesOf(label: string, recording: Json, shapes: Shape[]): Case[] {
  return shapes
    .map((s, i) => ({ s, i }))
    .filter(({ s }) => s.method === 'POST' && GENERATION.includes(s.route) && s.body_skeleton !== undefined)
    .map(({ s, i }) => ({
      name: `${label} #${i} ${s.route}`,
      route: s.route,
      body: fillSkeleton(
        inflateTools(recording as { tool_sets: Record<string, unknown> }, s.body_skeleton),
      ) as Json,
    }));
}

/** What a client sends that guardian itself answers or cuts (docs/native-compaction.md): never forwarded as sent. */
function speaksCompaction(c: Case): boolean {
  const items = Array.isArray(c.body.input) ? (c.body.input as Json[]) : [];
  return 'compaction' in c.body || items.some((i) => COMPACTION_ITEMS.includes(String(i?.type)));
}

const short = read(RECORDINGS_DIR).flatMap(({ file, json }) =>
  casesOf(file, { tool_sets: {} }, json.requests as Shape[]),
);
const long = read(join(RECORDINGS_DIR, 'long')).flatMap(({ file, json }) =>
  (json.sessions as Json[]).flatMap((s, k) =>
    casesOf(`long/${file} session ${k}`, json, s.requests as Shape[]),
  ),
);
const native = read(join(RECORDINGS_DIR, 'native'));
const nativeForwarded = native.flatMap(({ file, json }) =>
  casesOf(`native/${file} forwarded`, json, json.forwarded as Shape[]),
);
const nativeClient = native.flatMap(({ file, json }) =>
  casesOf(`native/${file}`, json, json.requests as Shape[]),
);

/**
 * The strict stub (docs/native-compaction.md#the-strict-stub) takes every request a recorded real client sent, as
 * guardian forwards it (Anthropic's `context_management` is applied and cut by guardian), and what the sidecar
 * forwarded in the native run; it refuses the compaction requests Codex sent, which guardian answers itself.
 */
describe('the strict stub and the recorded real clients', () => {
  let stub: StubBackend;
  beforeAll(async () => {
    stub = await startStub({ window: 1_000_000 });
  });
  afterAll(() => stub.close());

  const post = (route: string, body: Json) =>
    fetch(`${stub.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: false }),
    });

  it('has recordings to replay, the native run among them', () => {
    expect(short.length).toBeGreaterThan(0);
    expect(long.length).toBeGreaterThan(0);
    expect(nativeForwarded.length).toBeGreaterThan(0);
    expect(nativeClient.filter(speaksCompaction).length).toBeGreaterThan(0);
  });

  it.each([...short, ...long, ...nativeForwarded].map((c) => [c.name, c] as const))(
    'accepts %s',
    async (_name, c) => {
      const { context_management: _cut, ...body } = c.body;
      const res = await post(c.route, body);
      expect({ status: res.status, text: res.status === 200 ? '' : await res.text() }).toEqual({
        status: 200,
        text: '',
      });
    },
  );

  it.each(nativeClient.filter(speaksCompaction).map((c) => [c.name, c] as const))(
    'refuses what guardian answers itself: %s',
    async (_name, c) => {
      const res = await post(c.route, c.body);
      expect(res.status).toBe(400);
    },
  );
});
