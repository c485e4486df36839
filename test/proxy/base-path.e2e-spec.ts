import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import fc from 'fast-check';

import { startStub, type StubBackend } from '@guardian/stub-backend';
import { createLogger } from '@guardian/telemetry';

import { startGuardian, type RunningGuardian } from '../../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../../apps/guardian/src/config/guardian-config';

// Issue 30 item 4: with GUARDIAN_UPSTREAM_URL=<origin>/tenant-a/v1 nothing a client sends may reach the upstream
// outside /tenant-a (ARCHITECTURE.md#http-surface): `/v1/<rest>` goes to /tenant-a/v1/<rest>, any other path under
// /tenant-a, and a path that a server could read as climbing out is refused with 400 GUARDIAN_PATH_OUTSIDE_UPSTREAM.
// The stub records every path it receives, byte for byte. `fetch` would normalise the paths itself: these go out raw.

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

function codeOf(text: string): string | undefined {
  try {
    return (JSON.parse(text) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
}

const CHAT = JSON.stringify({ model: 'stub-model', messages: [{ role: 'user', content: 'hello' }] });

/** Every spelling of the climb the review tried, and the ones servers in front of models are known to decode. */
const CLIMBS = [
  '/v1/../../tenant-b/v1/models',
  '/v1/%2e%2e/%2e%2e/tenant-b/secret',
  '/v1/%2E%2E/%2e%2E/tenant-b/secret',
  '/v1/.%2e/%2e./tenant-b/secret',
  '/tenant-b/v1/models',
  '//tenant-b/v1/models',
  '/v1/..%2f..%2ftenant-b/secret',
  '/v1/..%2F..%2Ftenant-b/secret',
  '/v1/%2e%2e%2f%2e%2e%2ftenant-b/secret',
  '/v1/..\\..\\tenant-b/secret',
  '/v1/..%5c..%5Ctenant-b/secret',
  '/v1/%252e%252e/%252e%252e/tenant-b/secret',
  '/v1/%252e%252e%252f%252e%252e%252ftenant-b/secret',
  '/v1//..//..//tenant-b/secret',
  '/v1/..;/..;/tenant-b/secret',
  '/v1/%c0%ae%c0%ae/%c0%ae%c0%ae/tenant-b/secret',
  '/api/../../tenant-b/secret',
  '/v1/models/..%2f..%2f..%2ftenant-b?x=/tenant-a/',
];

describe('the upstream base path is a boundary', () => {
  let stub: StubBackend;
  let guardian: RunningGuardian;
  let dataDir: string;
  let url: string;
  const outside = (): string[] => stub.requests.map((r) => r.path).filter((p) => !p.startsWith('/tenant-a/'));

  beforeAll(async () => {
    stub = await startStub();
    dataDir = await mkdtemp(join(tmpdir(), 'cg-base-path-'));
    const config = GuardianConfig.fromEnv(
      {
        GUARDIAN_UPSTREAM_URL: `${stub.url}/tenant-a/v1`,
        GUARDIAN_DATA_DIR: dataDir,
        GUARDIAN_LOG_LEVEL: 'silent',
        // The window is given, so guardian's own probes (window detection) add nothing to what the stub records.
        GUARDIAN_NUM_CTX: '32768',
        GUARDIAN_PRECOMPACT_THRESHOLD: '0',
      },
      { version: 'test', home: dataDir },
    );
    guardian = await startGuardian(config, createLogger({ level: 'silent' }), { port: 0 });
    url = guardian.url;
  });
  afterAll(async () => {
    await guardian.close(200);
    await stub.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  beforeEach(() => stub.reset());

  it('forwards /v1/* under the base path and native paths under its root', async () => {
    expect((await raw(url, 'POST', '/v1/chat/completions', CHAT)).status).toBe(404);
    await raw(url, 'GET', '/v1/models?limit=1');
    await raw(url, 'HEAD', '/');
    await raw(url, 'GET', '/api/tags');
    expect(stub.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /tenant-a/v1/chat/completions',
      'GET /tenant-a/v1/models?limit=1',
      'HEAD /tenant-a/',
      'GET /tenant-a/api/tags',
    ]);
  });

  it.each(CLIMBS)('%s never reaches the upstream outside /tenant-a', async (path) => {
    const get = await raw(url, 'GET', path);
    const post = await raw(url, 'POST', path, CHAT);
    expect(outside()).toEqual([]);
    for (const res of [get, post]) {
      // Refused in guardian's name, or forwarded under the prefix (where the stub has nothing: its own 404).
      if (res.status === 400) expect(codeOf(res.text)).toBe('GUARDIAN_PATH_OUTSIDE_UPSTREAM');
      else expect(res.status).toBe(404);
    }
  });

  it('refuses an encoded climb with a 400 in the route’s shape, and the upstream hears nothing', async () => {
    const openai = await raw(url, 'POST', '/v1/chat/completions/..%2f..%2f..%2f..%2ftenant-b', CHAT);
    expect([openai.status, JSON.parse(openai.text)]).toEqual([
      400,
      { error: expect.objectContaining({ code: 'GUARDIAN_PATH_OUTSIDE_UPSTREAM' }) },
    ]);
    const anthropic = await raw(url, 'POST', '/v1/messages/..%2f..%2f..%2ftenant-b', CHAT);
    expect([anthropic.status, JSON.parse(anthropic.text)]).toMatchObject([
      400,
      { type: 'error', error: { code: 'GUARDIAN_PATH_OUTSIDE_UPSTREAM' } },
    ]);
    expect(stub.requests).toEqual([]);
  });

  it('keeps an encoded slash that stays inside, as written (a model id)', async () => {
    await raw(url, 'GET', '/v1/models/Qwen%2FQwen2.5-7B');
    expect(stub.requests.map((r) => r.path)).toEqual(['/tenant-a/v1/models/Qwen%2FQwen2.5-7B']);
  });

  it('never lets a generated path reach the upstream outside /tenant-a (property)', async () => {
    const piece = fc.constantFrom(
      '..',
      '.',
      '%2e%2e',
      '%2E.',
      '%252e%252e',
      '..;',
      '%c0%ae%c0%ae',
      '/',
      '//',
      '\\',
      '%2f',
      '%2F',
      '%5c',
      '%252f',
      'v1',
      'tenant-b',
      'models',
    );
    const path = fc
      .array(piece, { minLength: 1, maxLength: 10 })
      .map((parts) => `/${parts.join('')}`)
      .chain((p) => fc.constantFrom(p, `/v1/${p.slice(1)}`));
    await fc.assert(
      fc.asyncProperty(path, async (p) => {
        stub.reset();
        const res = await raw(url, 'GET', p);
        expect([p, outside()]).toEqual([p, []]);
        // Either refused in guardian's name, or forwarded (once) and answered by the stub.
        const verdict = res.status === 400 ? codeOf(res.text) : `forwarded ${stub.requests.length}`;
        expect([p, verdict]).toEqual([
          p,
          res.status === 400 ? 'GUARDIAN_PATH_OUTSIDE_UPSTREAM' : 'forwarded 1',
        ]);
      }),
      { numRuns: 200 },
    );
  });
});
