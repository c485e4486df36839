import { request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';

import { samples, sumOf } from '../support/prom-text';
import { startStack, type Stack } from '../support/stack';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  upgraded: boolean;
}

/**
 * A WebSocket opening handshake as RFC 6455 §4.1 writes it, and Codex's Responses transport sends it to
 * `GET <base>/responses`. node:http, because fetch will not send `Upgrade`.
 */
function handshake(url: string, extra: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'GET',
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        authorization: 'Bearer sk-test',
        ...extra,
      },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '', upgraded: true });
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          upgraded: false,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

async function metric(stack: Stack, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${stack.guardian.url}/metrics`)).text();
  return sumOf(samples(text), name, labels);
}

describe('WebSocket upgrades (Codex tries its Responses WebSocket first, issue 27 item 5)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });
  beforeEach(() => stack.stub.reset());

  it('answers GET /v1/responses with 426 in the OpenAI error shape, forwards nothing, and counts it', async () => {
    const before = await metric(stack, 'guardian_websocket_upgrades_refused_total', { route: 'responses' });
    const res = await handshake(`${stack.baseURL}/responses`, {
      'openai-beta': 'responses_websockets=2026-02-04',
    });
    expect(res.upgraded).toBe(false);
    expect(res.status).toBe(426);
    expect(res.headers.upgrade).toBe('HTTP/1.1');
    expect(JSON.parse(res.body)).toEqual({
      error: {
        message: expect.stringContaining('WebSocket') as unknown,
        type: 'invalid_request_error',
        param: null,
        code: 'GUARDIAN_WEBSOCKET_UNSUPPORTED',
      },
    });
    expect(stack.stub.requests).toHaveLength(0);
    expect(await metric(stack, 'guardian_websocket_upgrades_refused_total', { route: 'responses' })).toBe(
      before + 1,
    );
    expect(
      await metric(stack, 'guardian_requests_total', { route: 'responses', outcome: 'refused' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('answers an upgrade on /v1/messages in the Anthropic error shape, and on any other proxied path', async () => {
    const messages = await handshake(`${stack.guardian.url}/v1/messages`);
    expect(messages.status).toBe(426);
    expect(JSON.parse(messages.body)).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', code: 'GUARDIAN_WEBSOCKET_UNSUPPORTED' },
    });
    // The Realtime API's path and an unowned one: guardian relays no WebSocket anywhere, so none is forwarded.
    const realtime = await handshake(`${stack.baseURL}/realtime?model=stub-model`, { upgrade: 'WebSocket' });
    expect(realtime.status).toBe(426);
    expect(stack.stub.requests).toHaveLength(0);
    expect(await metric(stack, 'guardian_websocket_upgrades_refused_total', { route: 'other' })).toBe(1);
  });

  it('forwards a plain GET on the same path, and an upgrade to another protocol, as before', async () => {
    const plain = await fetch(`${stack.baseURL}/responses`);
    expect(plain.status).toBe(404);
    const h2c = await handshake(`${stack.baseURL}/models`, {
      upgrade: 'h2c',
      connection: 'Upgrade, HTTP2-Settings',
    });
    expect(h2c.status).toBe(200);
    expect(stack.stub.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v1/responses',
      'GET /v1/models',
    ]);
  });
});
