import { Conversation } from '../faults/support/traffic';
import { startStack, type Stack } from '../support/stack';

// Model names are the client's to choose. State keyed by them (windows per model, calibration) is bounded like
// sessions are, and window discovery upstream is rate-limited, so a client cycling through names can neither grow
// the sidecar nor flood the backend with discovery calls (issue 12 defect 6: 15,000 names made /guardian/stats
// 3.9 MB and cost 15,000 discovery calls).

const NAMES = 400;

interface Stats {
  windows: Record<string, { window: number; source: string }>;
}

async function chat(stack: Stack, model: string): Promise<number> {
  const res = await fetch(`${stack.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function manyNames(stack: Stack): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < NAMES; i += 50) {
    const batch = Array.from({ length: Math.min(50, NAMES - i) }, (_, k) => chat(stack, `model-${i + k}`));
    statuses.push(...(await Promise.all(batch)));
  }
  return statuses;
}

async function stats(stack: Stack): Promise<{ text: string; body: Stats }> {
  const text = await (await fetch(`${stack.guardian.url}/guardian/stats`)).text();
  return { text, body: JSON.parse(text) as Stats };
}

describe('client-chosen model names with GUARDIAN_NUM_CTX set', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ stub: { window: 100_000 }, env: { GUARDIAN_NUM_CTX: '100000' } });
  });
  afterAll(async () => {
    await stack.close();
  });

  it(`${NAMES} distinct names: every request answered, the most recent 256 windows kept`, async () => {
    expect((await manyNames(stack)).filter((s) => s !== 200)).toEqual([]);
    const { text, body } = await stats(stack);
    expect(Object.keys(body.windows)).toHaveLength(256);
    expect(body.windows[`model-${NAMES - 1}`]).toEqual({ window: 100000, source: 'env' });
    expect(body.windows['model-0']).toBeUndefined();
    expect(text.length).toBeLessThan(64 * 1024);
  });
});

describe('client-chosen model names, windows detected from the upstream', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ stub: { window: 100_000 } });
  });
  afterAll(async () => {
    await stack.close();
  });

  it(`${NAMES} distinct names: every request answered, discovery rate-limited`, async () => {
    const started = Date.now();
    expect((await manyNames(stack)).filter((s) => s !== 200)).toEqual([]);
    const { text, body } = await stats(stack);
    expect(Object.keys(body.windows).length).toBeLessThanOrEqual(256);
    expect(text.length).toBeLessThan(64 * 1024);
    // A burst of 16, then 16 a minute. The stub answers the first probe (vLLM's /v1/models).
    const minutes = (Date.now() - started) / 60_000;
    const discoveries = stack.stub.requests.filter((r) => r.route === 'window').length;
    expect(discoveries).toBeGreaterThan(0);
    expect(discoveries).toBeLessThanOrEqual(16 + Math.ceil(16 * minutes));
  });

  it('a name of 100,000 characters is served, compacted, and kept out of stats and events', async () => {
    const huge = `m${'x'.repeat(100_000)}`;
    expect(await chat(stack, huge)).toBe(200);
    // Over the default window's budget (a name that long is never discovered), so the request compacts.
    const body = { ...new Conversation('chat', 7, 1500).body(16, false), model: huge };
    const res = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const stats = await (await fetch(`${stack.guardian.url}/guardian/stats`)).text();
    expect(stats.length).toBeLessThan(64 * 1024);
    expect(stats).not.toContain('x'.repeat(1000));
    const events = (await (await fetch(`${stack.guardian.url}/guardian/events`)).json()) as {
      events: { kind: string; model?: string }[];
    };
    const compaction = events.events.find((e) => e.kind === 'compaction');
    expect(compaction?.model?.length).toBeLessThanOrEqual(300);
    expect(compaction?.model?.startsWith('mxxx')).toBe(true);
  });
});
