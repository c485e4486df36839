import { request as httpRequest } from 'node:http';

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { startStack, type Stack } from '../support/stack';
import { until } from '../support/wait';

/** A raw HTTP exchange, so tests can see exact bytes, statuses and headers. */
async function raw(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
) {
  const res = await fetch(url, { method: init.method ?? 'GET', headers: init.headers, body: init.body });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('transparent proxy (requests guardian does not change)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });
  beforeEach(() => stack.stub.reset());

  it('gives an OpenAI SDK client the same answer as the upstream gives directly, JSON and streamed', async () => {
    const viaGuardian = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test' });
    const direct = new OpenAI({ baseURL: stack.stub.baseUrl, apiKey: 'sk-test' });
    const params = { model: 'stub-model', messages: [{ role: 'user' as const, content: 'hello there' }] };
    const a = await viaGuardian.chat.completions.create(params);
    const b = await direct.chat.completions.create(params);
    expect({ ...a, id: '', created: 0 }).toEqual({ ...b, id: '', created: 0 });

    const collect = async (c: OpenAI) => {
      const stream = await c.chat.completions.create({
        ...params,
        stream: true,
        stream_options: { include_usage: true },
      });
      const parts: string[] = [];
      let usage: unknown;
      for await (const chunk of stream) {
        parts.push(chunk.choices[0]?.delta.content ?? '');
        if (chunk.usage) usage = chunk.usage;
      }
      return { text: parts.join(''), usage };
    };
    expect(await collect(viaGuardian)).toEqual(await collect(direct));
  });

  it('forwards the request bytes unchanged and drops only hop-by-hop and X-Guardian-* headers', async () => {
    const body = '{"model":"stub-model",  "messages":[{"role":"user","content":"spacing kept"}]}';
    // node:http, because fetch refuses to send hop-by-hop headers at all.
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        `${stack.baseURL}/chat/completions?trace=1`,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-guardian-session': 's1',
            'x-custom': 'kept',
            'keep-alive': 'timeout=5',
            connection: 'keep-alive, x-hop',
            'x-hop': 'named by Connection, so dropped',
          },
        },
        (res) => {
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    const rec = stack.stub.requests.at(-1)!;
    expect(rec.body.toString('utf8')).toBe(body);
    expect(rec.path).toBe('/v1/chat/completions?trace=1');
    expect(rec.headers['x-custom']).toBe('kept');
    expect(rec.headers['x-guardian-session']).toBeUndefined();
    expect(rec.headers['keep-alive']).toBeUndefined();
    expect(rec.headers['x-hop']).toBeUndefined();
  });

  it('keeps the query string and both Anthropic auth styles (Claude Code posts /v1/messages?beta=true)', async () => {
    const keyed = new Anthropic({
      baseURL: stack.guardian.url,
      apiKey: null,
      authToken: null,
      defaultHeaders: { 'x-api-key': 'sk-ant-test', 'anthropic-beta': 'tools-2024,context-1m' },
    });
    const msg = await keyed.messages.create(
      { model: 'stub-model', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] },
      { query: { beta: 'true' } },
    );
    expect(msg.content[0]).toMatchObject({ type: 'text' });
    const rec = stack.stub.requests.at(-1)!;
    expect(rec.path).toBe('/v1/messages?beta=true');
    expect(rec.headers['x-api-key']).toBe('sk-ant-test');
    expect(rec.headers['anthropic-version']).toBeDefined();
    expect(rec.headers['anthropic-beta']).toBe('tools-2024,context-1m');

    const bearer = new Anthropic({ baseURL: stack.guardian.url, authToken: 'tok-123', apiKey: null });
    await bearer.messages.create({
      model: 'stub-model',
      max_tokens: 32,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(stack.stub.requests.at(-1)!.headers.authorization).toBe('Bearer tok-123');
  });

  it('streams SSE as it arrives: event 1 reaches the client while the upstream still withholds event 2', async () => {
    const hold = stack.stub.holdNextStream();
    const res = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'stub-model',
        stream: true,
        messages: [{ role: 'user', content: 'stream please' }],
      }),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    await hold.firstEventSent;
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('data: ');
    hold.release();
    let rest = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toContain('[DONE]');
  });

  it('passes HEAD /, an Ollama-style /api path and an unknown path through with the upstream status', async () => {
    const head = await fetch(`${stack.guardian.url}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(stack.stub.requests.at(-1)).toMatchObject({ method: 'HEAD', path: '/' });
    const unknown = await raw(`${stack.guardian.url}/api/nothing-here?x=1`);
    expect(unknown.status).toBe(404);
    expect(stack.stub.requests.at(-1)!.path).toBe('/api/nothing-here?x=1');
  });

  it('forwards malformed JSON on a compacting route unchanged and lets the upstream answer it', async () => {
    const body = '{"model": "stub-model", "messages": [ broken';
    const res = await raw(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(stack.stub.requests.at(-1)!.body.toString()).toBe(body);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.text).not.toContain('GUARDIAN_INTERNAL');
  });

  it('aborts the upstream request when the client goes away', async () => {
    const hold = stack.stub.holdNextStream();
    const controller = new AbortController();
    const pending = fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'stub-model',
        stream: true,
        messages: [{ role: 'user', content: 'abort me' }],
      }),
      signal: controller.signal,
    });
    const res = await pending;
    await hold.firstEventSent;
    controller.abort();
    await res.body?.cancel().catch(() => undefined);
    // Guardian hangs up on the upstream once the client has gone; the stub holds its answer until then.
    await until('guardian to hang up on the upstream', () => stack.stub.requests.at(-1)?.aborted === true);
    hold.release();
  });
});

describe('upstream down', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
    await stack.stub.close();
  });
  afterAll(async () => {
    await stack.guardian.close();
  });

  it('answers 502 with an OpenAI-shaped body on OpenAI routes and an Anthropic-shaped body on /v1/messages', async () => {
    const body = JSON.stringify({
      model: 'stub-model',
      messages: [{ role: 'user', content: 'anyone there?' }],
    });
    const oa = await raw(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(oa.status).toBe(502);
    expect(JSON.parse(oa.text)).toMatchObject({
      error: { code: 'UPSTREAM_UNREACHABLE', type: 'server_error' },
    });
    const an = await raw(`${stack.baseURL}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(an.status).toBe(502);
    expect(JSON.parse(an.text)).toMatchObject({
      type: 'error',
      error: { type: 'api_error', code: 'UPSTREAM_UNREACHABLE' },
    });
  });

  it("the OpenAI SDK surfaces the 502 as an APIError with guardian's code", async () => {
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'k', maxRetries: 0 });
    await expect(
      client.chat.completions.create({ model: 'stub-model', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({
      status: 502,
      code: 'UPSTREAM_UNREACHABLE',
    });
  });
});

describe('upstream timeout', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ stub: { latencyMs: 3000 }, env: { GUARDIAN_UPSTREAM_TIMEOUT: '0.3' } });
  });
  afterAll(async () => {
    await stack.close();
  });

  it('answers 504 UPSTREAM_TIMEOUT when the upstream does not answer in GUARDIAN_UPSTREAM_TIMEOUT', async () => {
    const res = await raw(`${stack.baseURL}/models`);
    expect(res.status).toBe(504);
    expect(JSON.parse(res.text)).toMatchObject({ error: { code: 'UPSTREAM_TIMEOUT' } });
  });
});

describe('body limit', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { GUARDIAN_MAX_BODY_BYTES: '2048' } });
  });
  afterAll(async () => {
    await stack.close();
  });

  it('refuses a body over GUARDIAN_MAX_BODY_BYTES with a 413 shaped like the route', async () => {
    const body = JSON.stringify({
      model: 'stub-model',
      messages: [{ role: 'user', content: 'x'.repeat(5000) }],
    });
    const openai = await raw(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(openai.status).toBe(413);
    expect(JSON.parse(openai.text)).toMatchObject({ error: { code: 'GUARDIAN_BODY_TOO_LARGE' } });
    const anthropic = await raw(`${stack.baseURL}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(anthropic.status).toBe(413);
    expect(JSON.parse(anthropic.text)).toMatchObject({
      type: 'error',
      error: { type: 'request_too_large', code: 'GUARDIAN_BODY_TOO_LARGE' },
    });
    expect(stack.stub.requests).toHaveLength(0);
  });

  it('sends a body without a content type through unchanged', async () => {
    const res = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${stack.baseURL}/completions`, { method: 'POST' }, (r) => {
        r.resume();
        resolve(r.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end('plain bytes');
    });
    expect(res).toBeGreaterThan(0);
    expect(stack.stub.requests.at(-1)!.body.toString()).toBe('plain bytes');
  });
});

describe('guardian_requests_total', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  it('counts guardian’s own endpoints as route "guardian" and forwarded paths as route "other"', async () => {
    await raw(`${stack.guardian.url}/guardian/stats`);
    await raw(`${stack.guardian.url}/guardian/usage?session=nobody`); // 404: refused
    await raw(`${stack.guardian.url}/api/tags`);
    const metrics = (await raw(`${stack.guardian.url}/metrics`)).text;
    const count = (labels: string) =>
      Number(new RegExp(`^guardian_requests_total\\{${labels}\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0);
    expect(count('route="guardian",outcome="served"')).toBeGreaterThanOrEqual(1);
    expect(count('route="guardian",outcome="refused"')).toBe(1);
    expect(count('route="other",outcome="passthrough"')).toBe(1);
  });
});

// Issue 12 defect 4: an error answer over the 1 MB guardian reads (to recognise an overflow) became guardian's own
// 502 UPSTREAM_UNREACHABLE, so SDKs retried what was the upstream's 400.
describe('an upstream error answer over 1 MB', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ stub: { window: 1_000_000 } });
  });
  afterAll(async () => {
    await stack.close();
  });

  it.each([
    ['chat', '/chat/completions', 400],
    ['messages', '/messages', 503],
  ])('reaches the %s client as the upstream sent it: status and every byte', async (_route, path, status) => {
    const error = {
      error: { message: `invalid request: ${'x'.repeat(2 * 1024 * 1024)}`, type: 'invalid_request' },
    };
    stack.stub.failNext(status, error);
    const res = await raw(`${stack.baseURL}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'stub-model',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(res.status).toBe(status);
    expect(res.text).toBe(JSON.stringify(error));
  });
});
