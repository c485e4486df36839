import type { Stack } from '../support/stack';
import { rawGet, startWindowStack } from './support';

// ARCHITECTURE.md#access: metadata is open unless GUARDIAN_ADMIN_TOKEN is set; then /guardian/* needs
// X-Guardian-Token while the probes and /metrics stay open to the cluster. On a loopback bind Host and Origin are
// checked (DNS rebinding).

function codeOf(body: string): unknown {
  return (JSON.parse(body) as { error?: { code?: unknown } }).error?.code;
}

describe('guardian endpoints with GUARDIAN_ADMIN_TOKEN set', () => {
  const TOKEN = 'admin-token-7c41e2';
  let stack: Stack;
  let url: string;
  beforeAll(async () => {
    stack = await startWindowStack({ GUARDIAN_ADMIN_TOKEN: TOKEN });
    url = stack.guardian.url;
  });
  afterAll(async () => {
    await stack.close();
  });

  it.each(['/guardian/stats', '/guardian/events', '/guardian/usage'])(
    '%s: no token is 401, a wrong one 403, the right one gets through',
    async (path) => {
      const none = await rawGet(`${url}${path}`);
      expect([none.status, codeOf(none.body)]).toEqual([401, 'GUARDIAN_TOKEN_REQUIRED']);
      const wrong = await rawGet(`${url}${path}`, { 'x-guardian-token': `${TOKEN}x` });
      expect([wrong.status, codeOf(wrong.body)]).toEqual([403, 'GUARDIAN_TOKEN_INVALID']);
      // A bearer token is the upstream's business, never guardian's.
      const bearer = await rawGet(`${url}${path}`, { authorization: `Bearer ${TOKEN}` });
      expect(bearer.status).toBe(401);
      const right = await rawGet(`${url}${path}`, { 'x-guardian-token': TOKEN });
      // usage answers 404 until a session has been seen: past the guard either way.
      expect(right.status).toBe(path === '/guardian/usage' ? 404 : 200);
    },
  );

  it('keeps /healthz, /readyz and /metrics open, and serves the page so that it can ask for the token', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect([path, (await rawGet(`${url}${path}`)).status]).toEqual([path, 200]);
    }
    const page = await rawGet(`${url}/guardian/health`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('id="token-form"');
    expect(page.body).not.toContain(TOKEN);
  });

  it('answers /favicon.ico itself with 204, without asking the upstream', async () => {
    stack.stub.reset();
    const res = await rawGet(`${url}/favicon.ico`);
    expect([res.status, res.body]).toEqual([204, '']);
    expect(stack.stub.requests).toEqual([]);
  });
});

describe('Host and Origin checks on a loopback bind', () => {
  let stack: Stack;
  let url: string;
  let port: string;
  beforeAll(async () => {
    stack = await startWindowStack({ GUARDIAN_ALLOWED_HOSTS: 'guardian.internal, Dash.Example:9000' });
    url = stack.guardian.url;
    port = new URL(url).port;
  });
  afterAll(async () => {
    await stack.close();
  });

  it.each(['/guardian/stats', '/guardian/events', '/guardian/health'])(
    '%s refuses a foreign Host or Origin and accepts loopback and GUARDIAN_ALLOWED_HOSTS',
    async (path) => {
      const evilHost = await rawGet(`${url}${path}`, { host: `evil.example:${port}` });
      expect([evilHost.status, codeOf(evilHost.body)]).toEqual([403, 'GUARDIAN_HOST_REFUSED']);
      const evilOrigin = await rawGet(`${url}${path}`, { origin: 'http://evil.example' });
      expect([evilOrigin.status, codeOf(evilOrigin.body)]).toEqual([403, 'GUARDIAN_ORIGIN_REFUSED']);
      const garbled = await rawGet(`${url}${path}`, { origin: 'not a url' });
      expect(garbled.status).toBe(403);
      // A sandboxed iframe's `Origin: null` names no site: refused like a foreign one (issue 30 item 6).
      const opaque = await rawGet(`${url}${path}`, { origin: 'null' });
      expect([opaque.status, codeOf(opaque.body)]).toEqual([403, 'GUARDIAN_ORIGIN_REFUSED']);

      const accepted: Record<string, string>[] = [
        { host: `localhost:${port}` },
        { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` },
        { host: `guardian.internal:${port}` },
        { host: 'dash.example', origin: 'https://DASH.example' },
      ];
      for (const headers of accepted) {
        expect([headers, (await rawGet(`${url}${path}`, headers)).status]).toEqual([headers, 200]);
      }
    },
  );

  it('applies the check to the probes and /metrics too (ARCHITECTURE.md#access: every route on a loopback bind)', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const res = await rawGet(`${url}${path}`, { host: 'evil.example', origin: 'http://evil.example' });
      expect([path, res.status, codeOf(res.body)]).toEqual([path, 403, 'GUARDIAN_HOST_REFUSED']);
      expect([path, (await rawGet(`${url}${path}`)).status]).toEqual([path, 200]);
    }
  });
});
