import { request } from 'node:http';

import { startStack, type Stack } from '../support/stack';

// Dot segments are resolved before guardian routes a request (apps/guardian/src/http/dot-segments.ts): the upstream
// hears the path they resolve to, and a path that resolves into /guardian is guardian's own. `fetch` would resolve
// them itself, so these requests go out raw.

function raw(
  base: string,
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; text: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('dot segments in a request path', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  it('forwards the path they resolve to, under the upstream prefix', async () => {
    stack.stub.reset();
    const res = await raw(stack.guardian.url, 'GET', '/v1/chat/../models?limit=2');
    expect(res.status).toBe(200);
    expect(stack.stub.requests.map((r) => r.path)).toEqual(['/v1/models?limit=2']);
  });

  it('never forwards a path that climbs out of the upstream prefix as written', async () => {
    stack.stub.reset();
    await raw(stack.guardian.url, 'GET', '/v1/%2e%2e/%2E%2E/etc/passwd');
    expect(stack.stub.requests.map((r) => r.path)).toEqual(['/etc/passwd']);
  });

  it('serves a path that resolves into /guardian itself, and the upstream hears nothing', async () => {
    stack.stub.reset();
    const res = await raw(stack.guardian.url, 'GET', '/v1/../guardian/stats');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toHaveProperty('sessions');
    expect(stack.stub.requests).toEqual([]);
  });

  it("keeps a path written under /guardian as guardian's own, whatever it resolves to: never forwarded", async () => {
    stack.stub.reset();
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }] });
    for (const [method, path] of [
      ['POST', '/guardian/../v1/chat/completions'],
      ['GET', '/guardian/%2e%2e/%2e%2e/etc/passwd'],
    ] as const) {
      const res = await raw(stack.guardian.url, method, path, method === 'POST' ? body : undefined);
      expect([path, res.status, JSON.parse(res.text).error.code]).toEqual([path, 404, 'GUARDIAN_NOT_FOUND']);
    }
    expect(stack.stub.requests).toEqual([]);
  });
});
