import { request as httpRequest } from 'node:http';

import Anthropic from '@anthropic-ai/sdk';

import { startStack, type Stack } from '../support/stack';
import { filler, forwarded, isObj, type Json } from '../compaction/support';

// Issue 28 item 3: what Claude Code's gateway page asks of a gateway, each held by a test. Passthrough bytes are held
// in passthrough.e2e-spec; here the request is compacted, where guardian rewrites the body.
const WINDOW = 6000;
const ENV = { GUARDIAN_NUM_CTX: String(WINDOW), GUARDIAN_RESERVE_OUTPUT: '1000' };
const ATTRIBUTION = {
  type: 'text',
  text: 'x-anthropic-billing-header: cc_version=2.1.0; cc_entrypoint=cli;',
};
const SYSTEM = [
  ATTRIBUTION,
  { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
  { type: 'text', text: 'Project rules: keep the ledger consistent.' },
];

function longHistory(): Json[] {
  const out: Json[] = [];
  for (let t = 1; t <= 14; t++)
    out.push(
      { role: 'user', content: `Notes ${t}:\n${filler(t, 200)}` },
      { role: 'assistant', content: 'Noted.' },
    );
  out.push({ role: 'user', content: 'What next?' });
  return out;
}

function raw(
  stack: Stack,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const url = new URL(path, stack.guardian.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the gateway contract', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ stub: { flavor: 'anthropic', window: WINDOW }, env: ENV });
  });
  afterAll(() => stack.close());
  beforeEach(() => stack.stub.reset());

  it('a compacted /v1/messages keeps the anthropic headers, unknown body fields and the system blocks in order', async () => {
    const body = {
      model: 'stub-model',
      max_tokens: 256,
      system: SYSTEM,
      messages: longHistory(),
      metadata: { user_id: 'user_abc_account_def_session_ghi' },
      thinking: { type: 'enabled', budget_tokens: 1024 },
      // Fields guardian does not model, newer than its adapter: they must reach the backend as sent. (A made-up
      // field stood here; the stub now refuses what the API does not define, as a backend does.)
      inference_geo: { region: 'eu', nested: [1, 'two', null] },
      speed: 'fast',
    };
    const headers = {
      'content-type': 'application/json',
      'x-api-key': 'sk-ant-test',
      'anthropic-version': '2023-06-01',
      'anthropic-beta':
        'claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14',
    };
    const res = await raw(stack, 'POST', '/v1/messages?beta=true', headers, JSON.stringify(body));
    expect(res.status).toBe(200);
    const sent = forwarded(stack.stub).at(-1)!;
    const json = sent.json as Json;
    // It was compacted (else this test holds nothing the passthrough test does not).
    expect((json.messages as unknown[]).length).toBeLessThan(body.messages.length);
    expect(sent.path).toBe('/v1/messages?beta=true');
    for (const name of ['anthropic-version', 'anthropic-beta', 'x-api-key'] as const)
      expect({ name, value: sent.headers[name] }).toEqual({ name, value: headers[name] });
    for (const key of ['metadata', 'thinking', 'inference_geo', 'speed', 'max_tokens', 'model'] as const)
      expect({ key, value: json[key] }).toEqual({ key, value: body[key] });
    // system[0] is the attribution block, never merged, moved or rewritten; the client's blocks keep their order.
    const system = json.system as unknown[];
    expect(Array.isArray(system)).toBe(true);
    expect(system[0]).toEqual(ATTRIBUTION);
    const positions = SYSTEM.map((block) =>
      system.findIndex((b) => JSON.stringify(b) === JSON.stringify(block)),
    );
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  });

  it.each([
    ['/v1/messages', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 529],
    [
      '/v1/chat/completions',
      { error: { message: 'Rate limit reached', type: 'rate_limit', code: 'rl' } },
      429,
    ],
    [
      '/v1/responses',
      { error: { message: 'bad input', type: 'invalid_request_error', param: 'input' } },
      400,
    ],
  ])(
    'forwards the upstream error body of %s unmodified, status and bytes',
    async (path, errorBody, status) => {
      stack.stub.failNext(status, errorBody);
      const req =
        path === '/v1/messages'
          ? { model: 'stub-model', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }
          : path === '/v1/responses'
            ? { model: 'stub-model', input: 'hi' }
            : { model: 'stub-model', messages: [{ role: 'user', content: 'hi' }] };
      const res = await raw(stack, 'POST', path, { 'content-type': 'application/json' }, JSON.stringify(req));
      expect(res.status).toBe(status);
      expect(res.body).toBe(JSON.stringify(errorBody));
    },
  );

  it('the Anthropic SDK sees the upstream error as the upstream sent it', async () => {
    const body = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
    stack.stub.failNext(529, body);
    const sdk = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-ant-test', maxRetries: 0 });
    const err = await sdk.messages
      .create({ model: 'stub-model', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect({
      status: (err as InstanceType<typeof Anthropic.APIError>).status,
      error: (err as InstanceType<typeof Anthropic.APIError>).error,
    }).toEqual({
      status: 529,
      error: body,
    });
  });

  it("passes Claude Code's probes through: HEAD /api/hello and GET /v1/models?limit=1000", async () => {
    const hello = await raw(stack, 'HEAD', '/api/hello', { 'x-api-key': 'sk-ant-test' });
    const probe = stack.stub.requests.at(-1)!;
    expect({ method: probe.method, path: probe.path, key: probe.headers['x-api-key'] }).toEqual({
      method: 'HEAD',
      path: '/api/hello',
      key: 'sk-ant-test',
    });
    expect(hello.status).toBe(probe.status);
    expect(hello.body).toBe('');

    const models = await raw(stack, 'GET', '/v1/models?limit=1000', { 'anthropic-version': '2023-06-01' });
    const listed = stack.stub.requests.at(-1)!;
    expect({ method: listed.method, path: listed.path }).toEqual({
      method: 'GET',
      path: '/v1/models?limit=1000',
    });
    expect(models.status).toBe(200);
    const list = JSON.parse(models.body) as Json;
    expect(isObj(list) && Array.isArray(list.data)).toBe(true);
  });
});
