import { request as httpRequest } from 'node:http';

import { startStack, type Stack } from '../support/stack';

// ARCHITECTURE.md#access (changed by issue 12): on a loopback bind EVERY route checks Host and Origin, the proxied
// /v1/* included, because a web page that rebinds its name to 127.0.0.1 could otherwise drive the user's backend
// through the sidecar; browsers' CORS preflights are refused there too. Beyond loopback the tokens do that job.

interface Raw {
  status: number;
  body: string;
}

function send(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const CHAT = JSON.stringify({ model: 'stub-model', messages: [{ role: 'user', content: 'hello' }] });
const MESSAGES = JSON.stringify({
  model: 'stub-model',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'hello' }],
});
const JSON_TYPE = { 'content-type': 'application/json' };

/** The error code of a JSON error body (OpenAI or Anthropic shape), or the body's start when it is not one. */
function codeOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { code?: string } };
    return parsed.error?.code ?? body.slice(0, 80);
  } catch {
    return body.slice(0, 80);
  }
}

function generation(stack: Stack) {
  return stack.stub.requests.filter((r) => r.route === 'chat' || r.route === 'messages');
}

describe('a loopback bind checks Host and Origin on every route', () => {
  let stack: Stack;
  let url: string;
  let port: string;
  beforeAll(async () => {
    stack = await startStack({ env: { GUARDIAN_ALLOWED_HOSTS: 'guardian.lan' } });
    url = stack.guardian.url;
    port = new URL(url).port;
  });
  afterAll(async () => {
    await stack.close();
  });
  beforeEach(() => stack.stub.reset());

  it('refuses a rebound Host on /v1/chat/completions with an OpenAI-shaped 403, and asks the upstream nothing', async () => {
    const res = await send(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...JSON_TYPE, host: `attacker.example:${port}` },
      body: CHAT,
    });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body)).toMatchObject({
      error: { code: 'GUARDIAN_HOST_REFUSED', type: 'invalid_request_error' },
    });
    expect(stack.stub.requests).toEqual([]);
  });

  it('refuses a foreign Origin on /v1/messages with an Anthropic-shaped 403', async () => {
    const res = await send(`${url}/v1/messages`, {
      method: 'POST',
      headers: { ...JSON_TYPE, origin: 'https://attacker.example' },
      body: MESSAGES,
    });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body)).toMatchObject({
      type: 'error',
      error: { type: 'permission_error', code: 'GUARDIAN_ORIGIN_REFUSED' },
    });
    expect(generation(stack)).toEqual([]);
  });

  // Issue 30 item 6: a sandboxed iframe, a data: URL or a file:// page sends `Origin: null` with a "simple" request
  // (a text/plain POST needs no preflight), so accepting it let any page drive the backend through the sidecar.
  it('refuses `Origin: null` like a foreign Origin on proxied paths, and asks the upstream nothing', async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', CHAT],
      ['/v1/messages', MESSAGES],
      ['/v1/responses', JSON.stringify({ model: 'stub-model', input: 'hello' })],
      ['/api/chat', CHAT],
    ] as const) {
      const res = await send(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', origin: 'null' },
        body,
      });
      expect([path, res.status, codeOf(res.body)]).toEqual([path, 403, 'GUARDIAN_ORIGIN_REFUSED']);
    }
    const get = await send(`${url}/v1/models`, { headers: { origin: 'null' } });
    expect([get.status, codeOf(get.body)]).toEqual([403, 'GUARDIAN_ORIGIN_REFUSED']);
    expect(stack.stub.requests).toEqual([]);
  });

  it("refuses `Origin: null` on guardian's own endpoints too", async () => {
    for (const [method, path] of [
      ['GET', '/guardian/stats'],
      ['GET', '/guardian/health'],
      ['GET', '/metrics'],
      ['POST', '/guardian/capture'],
    ] as const) {
      const res = await send(`${url}${path}`, {
        method,
        headers: { 'content-type': 'text/plain', origin: 'null' },
        body: method === 'POST' ? '{}' : undefined,
      });
      expect([path, res.status, codeOf(res.body)]).toEqual([path, 403, 'GUARDIAN_ORIGIN_REFUSED']);
    }
  });

  it('refuses a rebound Host on any other forwarded path and on the probes', async () => {
    for (const path of ['/v1/models', '/healthz', '/readyz', '/metrics', '/api/show']) {
      const res = await send(`${url}${path}`, { headers: { host: 'attacker.example' } });
      expect([path, res.status]).toEqual([path, 403]);
    }
    expect(stack.stub.requests).toEqual([]);
  });

  it("refuses a browser's preflight, even from a loopback page", async () => {
    const res = await send(`${url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:5173',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, authorization',
      },
    });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'GUARDIAN_PREFLIGHT_REFUSED' } });
    expect(res.body).not.toContain('access-control-allow');
    expect(stack.stub.requests).toEqual([]);
  });

  it('serves loopback names, a page on a loopback origin and GUARDIAN_ALLOWED_HOSTS', async () => {
    const accepted: Record<string, string>[] = [
      {},
      { host: `localhost:${port}` },
      { host: `[::1]:${port}` },
      { host: `127.0.0.1:${port}`, origin: 'http://localhost:5173' },
      { host: `guardian.lan:${port}` },
    ];
    for (const headers of accepted) {
      const res = await send(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...JSON_TYPE, ...headers },
        body: CHAT,
      });
      expect([headers, res.status]).toEqual([headers, 200]);
    }
    expect(generation(stack)).toHaveLength(accepted.length);
  });
});

describe('a bind beyond loopback leaves Host and Origin to the tokens', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { GUARDIAN_HOST: '0.0.0.0' } });
  });
  afterAll(async () => {
    await stack.close();
  });

  it('forwards a request whatever its Host and Origin', async () => {
    const port = new URL(stack.guardian.url).port;
    const res = await send(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...JSON_TYPE, host: 'guardian.team.example', origin: 'https://chat.team.example' },
      body: CHAT,
    });
    expect(res.status).toBe(200);
  });
});
