import { startStack, type Stack } from '../support/stack';
import { eventually, filler, getJson, postChat, type Json } from './support';

const USAGE_KEYS = [
  'count_source',
  'last_compaction_at',
  'model',
  'pct',
  'session_source',
  'used_after_compaction',
  'window',
];

function small(text: string): Json {
  return { model: 'stub-model', messages: [{ role: 'user', content: text }] };
}

/** About 7,500 stub tokens: over the 6,963-token budget (8192 window, reserve 1024). */
function overBudget(): Json {
  const messages: Json[] = [{ role: 'system', content: 'You review migration notes.' }];
  for (let t = 1; t <= 11; t++) {
    messages.push({ role: 'user', content: `Notes ${t}:\n${filler(t, 330)}` });
    messages.push({ role: 'assistant', content: `Reviewed ${t}.` });
  }
  messages.push({ role: 'user', content: 'What next?' });
  return { model: 'stub-model', messages };
}

describe('/guardian/usage', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: 8192 },
      env: { GUARDIAN_RESERVE_OUTPUT: '1024' },
    });
  });
  afterAll(async () => {
    await stack.close();
  });
  const usage = (query = '') => getJson(`${stack.guardian.url}/guardian/usage${query}`);

  it('is 404 before any request and for an unknown session, then answers per session', async () => {
    expect((await usage()).status).toBe(404);
    expect((await usage('?session=nobody')).status).toBe(404);

    expect((await postChat(stack.baseURL, small('hello'), { 'x-guardian-session': 'alice' })).status).toBe(
      200,
    );
    const latest = await eventually(async () => {
      const r = await usage();
      return r.status === 200 ? r.body : undefined;
    });
    expect(Object.keys(latest).sort()).toEqual(USAGE_KEYS);
    expect(latest).toMatchObject({
      window: 8192,
      model: 'stub-model',
      last_compaction_at: null,
      session_source: 'x-guardian-session',
    });
    expect((await usage('?session=alice')).body).toEqual(latest);
    expect((await usage('?session=bob')).status).toBe(404);
  });

  it('sets last_compaction_at after a compaction of that session', async () => {
    const before = Date.now();
    expect((await postChat(stack.baseURL, overBudget(), { 'x-guardian-session': 'carol' })).status).toBe(200);
    const carol = await eventually(async () => {
      const r = await usage('?session=carol');
      return r.status === 200 ? r.body : undefined;
    });
    expect(typeof carol.last_compaction_at).toBe('string');
    expect(Date.parse(String(carol.last_compaction_at))).toBeGreaterThanOrEqual(before - 1000);
    expect(carol.used_after_compaction as number).toBeLessThanOrEqual(8192);
    // Another session's record is untouched.
    expect((await usage('?session=alice')).body.last_compaction_at).toBeNull();
  });
});

async function usage(stack: Stack, query: string): Promise<number> {
  return (await getJson(`${stack.guardian.url}/guardian/usage${query}`)).status;
}

describe('the X-Guardian-Session header', () => {
  it('ignores a value over 256 bytes (derived key), warns in the response and still serves it', async () => {
    const stack = await startStack({ stub: { flavor: 'vllm', window: 8192 } });
    try {
      const long = 's'.repeat(300);
      const res = await postChat(stack.baseURL, small('hello'), { 'x-guardian-session': long });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-guardian-warning')).toMatch(/X-Guardian-Session ignored/);
      // The derived session (model + first system + first user) is the one recorded: the same conversation sent
      // without any header is the same session, while a short header names a different one.
      const sessions = async () =>
        ((await getJson(`${stack.guardian.url}/guardian/stats`)).body.sessions as Json[]).map(
          (x) => x.session,
        );
      await postChat(stack.baseURL, small('hello'));
      await postChat(stack.baseURL, small('hello'), { 'x-guardian-session': 'dev-1' });
      await eventually(async () => ((await usage(stack, '?session=dev-1')) === 200 ? true : undefined));
      // Three requests, two sessions: the ignored header fell back to the same derived key as no header at all.
      expect(await sessions()).toHaveLength(2);
      const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
      expect(metrics).toMatch(/^guardian_session_header_ignored_total\{reason="too_long"\} 1$/m);
      expect(stack.stub.requests.every((r) => r.headers['x-guardian-session'] === undefined)).toBe(true);
    } finally {
      await stack.close();
    }
  });

  it('answers 400 GUARDIAN_SESSION_REQUIRED when GUARDIAN_SESSION_HEADER_REQUIRED=1 and it is missing or ignored', async () => {
    const stack = await startStack({
      stub: { flavor: 'vllm', window: 8192 },
      env: { GUARDIAN_SESSION_HEADER_REQUIRED: '1' },
    });
    try {
      const missing = await postChat(stack.baseURL, small('hello'));
      expect(missing.status).toBe(400);
      expect((missing.body.error as Json).code).toBe('GUARDIAN_SESSION_REQUIRED');
      const ignored = await postChat(stack.baseURL, small('hello'), {
        'x-guardian-session': 'x'.repeat(300),
      });
      expect(ignored.status).toBe(400);
      expect((ignored.body.error as Json).code).toBe('GUARDIAN_SESSION_REQUIRED');
      expect(stack.stub.requests.filter((r) => r.route === 'chat')).toHaveLength(0);
      const ok = await postChat(stack.baseURL, small('hello'), { 'x-guardian-session': 'dev-1' });
      expect(ok.status).toBe(200);
    } finally {
      await stack.close();
    }
  });
});
