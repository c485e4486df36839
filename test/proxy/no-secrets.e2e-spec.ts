import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { startSidecarProcess, type SidecarProcess } from '../faults/support/sidecar-process';
import { Conversation, PATHS } from '../faults/support/traffic';

// "No secrets" (docs/RELIABILITY.md): credentials given to guardian (the upstream URL's user:pass, the admin token,
// the Redis password) and credentials clients send through it (Authorization, x-api-key) appear in no log line, no
// endpoint and no file of the data folder. The built sidecar runs as `npm start` does, at debug level, and the
// session compacts so that spans, the compaction log and receipts are really written.

const SECRETS = {
  upstreamPassword: 'upw-7f3a9c1e',
  upstreamUser: 'usr-b8d2e4',
  admin: 'adm-41c9e7d2',
  redisPassword: 'rds-5e0a8b3f',
  bearer: 'sk-client-2d7f90ab',
  apiKey: 'ant-client-c3e18f47',
};

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else out.push(p);
  }
  return out;
}

describe('secrets never leave the request they came with', () => {
  let stub: StubBackend;
  let dataDir: string;
  let sidecar: SidecarProcess;

  beforeAll(async () => {
    stub = await startStub({ window: 4096 });
    dataDir = await mkdtemp(join(tmpdir(), 'cg-secrets-'));
    const upstream = new URL(stub.baseUrl);
    upstream.username = SECRETS.upstreamUser;
    upstream.password = SECRETS.upstreamPassword;
    sidecar = await startSidecarProcess({
      GUARDIAN_UPSTREAM_URL: upstream.href,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_ADMIN_TOKEN: SECRETS.admin,
      // Nothing listens on port 1: the store logs its target and falls back to memory.
      GUARDIAN_REDIS_URL: `redis://:${SECRETS.redisPassword}@127.0.0.1:1`,
      GUARDIAN_RESERVE_OUTPUT: '512',
      GUARDIAN_LOG_LEVEL: 'debug',
    });
  });
  afterAll(async () => {
    sidecar?.kill('SIGKILL');
    await stub?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('shows none in the startup line, the endpoints, the logs or the archive', async () => {
    const headers = {
      'content-type': 'application/json',
      authorization: `Bearer ${SECRETS.bearer}`,
      'x-api-key': SECRETS.apiKey,
      'x-guardian-session': 'secrets-test',
    };
    for (const route of ['chat', 'messages'] as const) {
      const conv = new Conversation(route, route === 'chat' ? 1 : 2);
      for (let n = 1; n <= 12; n++) {
        const res = await fetch(`${sidecar.url}${PATHS[route]}`, {
          method: 'POST',
          headers,
          body: JSON.stringify(conv.body(n, n % 2 === 0)),
        });
        expect([route, n, res.status]).toEqual([route, n, 200]);
        await res.text();
      }
    }
    // A failing upstream call and an unknown path are logged too.
    await (await fetch(`${sidecar.url}/v1/nowhere`, { headers })).text();

    const admin = { 'x-guardian-token': SECRETS.admin };
    const endpoints: string[] = [];
    for (const path of ['/guardian/stats', '/guardian/events', '/guardian/usage', '/readyz', '/metrics']) {
      const res = await fetch(`${sidecar.url}${path}`, { headers: admin });
      endpoints.push(`${path}\n${await res.text()}`);
    }
    const stats = JSON.parse(endpoints[0]!.split('\n').slice(1).join('\n')) as Record<string, unknown>;
    expect(stats.upstream).toBe(`http://${new URL(stub.url).host}/v1`);

    sidecar.kill('SIGTERM');
    expect(await sidecar.exited).toEqual({ code: 0, signal: null });

    const files = await filesUnder(dataDir);
    const spans = files.filter((f) => /\/\d{4,}\.json$/.test(f));
    // The check below is only worth something if the archive was really written.
    expect(spans.length).toBeGreaterThan(0);
    expect(stub.requests.some((r) => r.isSummary)).toBe(true);
    const archive = await Promise.all(files.map(async (f) => `${f}\n${await readFile(f, 'utf8')}`));

    const seen = [...sidecar.stdout, sidecar.stderr(), ...endpoints, ...archive].join('\n');
    for (const [name, secret] of Object.entries(SECRETS))
      expect([name, seen.includes(secret)]).toEqual([name, false]);
    // The client's credentials still reached the upstream, which is where they belong.
    const forwardedAuth = stub.requests.filter((r) => r.headers.authorization === `Bearer ${SECRETS.bearer}`);
    expect(forwardedAuth.length).toBeGreaterThan(0);
  });
});
