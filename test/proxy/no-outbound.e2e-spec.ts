import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { startSidecarProcess, type SidecarProcess } from '../faults/support/sidecar-process';
import { Conversation, PATHS, ROUTES } from '../faults/support/traffic';
import { startRedis, type TestRedis } from '../support/redis';

// "No outbound calls except to the configured upstream" (docs/RELIABILITY.md): while the built sidecar compacts
// sessions on the three routes, talks to Redis and serves its own endpoints, every socket it holds is watched with
// `ss` (iproute2): each peer must be the upstream or Redis; no other TCP peer, no UDP (no DNS lookup) at all.

function peers(pid: number): string[] {
  const out = execFileSync('ss', ['-tunapH'], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.includes(`pid=${pid},`))
    .map((l) => l.trim().split(/\s+/))
    .filter((cols) => cols[1] !== 'LISTEN' && cols[1] !== 'UNCONN')
    .map((cols) => `${cols[0]} ${cols[4]} ${cols[5]}`);
}

describe('the sidecar talks to its upstream and Redis only', () => {
  let stub: StubBackend;
  let redis: TestRedis;
  let dataDir: string;
  let sidecar: SidecarProcess;
  beforeAll(async () => {
    stub = await startStub({ window: 4096 });
    redis = await startRedis({ owned: true });
    dataDir = await mkdtemp(join(tmpdir(), 'cg-outbound-'));
    sidecar = await startSidecarProcess({
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_REDIS_URL: redis.url,
      GUARDIAN_RESERVE_OUTPUT: '512',
    });
  });
  afterAll(async () => {
    sidecar?.kill('SIGKILL');
    await stub?.close();
    await redis?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('has no peer but those two while it compacts, stores memos and serves its endpoints', async () => {
    const seen = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const p of peers(sidecar.child.pid!)) seen.add(p);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    for (let n = 1; n <= 9; n++)
      await Promise.all(
        ROUTES.map(async (route, i) => {
          const res = await fetch(`${sidecar.url}${PATHS[route]}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-guardian-session': `outbound-${route}` },
            body: JSON.stringify(new Conversation(route, 300 + i).body(n, n % 2 === 0)),
          });
          expect(res.status).toBe(200);
          await res.arrayBuffer();
        }),
      );
    for (const path of ['/guardian/stats', '/guardian/events', '/readyz', '/metrics', '/guardian/health'])
      await (await fetch(`${sidecar.url}${path}`)).text();
    watching = false;
    await watcher;

    const upstream = `127.0.0.1:${new URL(stub.url).port}`;
    const store = `127.0.0.1:${new URL(redis.url).port}`;
    const client = `127.0.0.1:${new URL(sidecar.url).port}`;
    const foreign = [...seen].filter((p) => {
      const [proto, local, peer] = p.split(' ');
      // A connection a client made to the sidecar has the sidecar's own port as its local end.
      return !(proto === 'tcp' && (peer === upstream || peer === store || local === client));
    });
    expect(foreign).toEqual([]);
    const tcpPeers = new Set([...seen].map((p) => p.split(' ')[2]));
    // Both were really used, or the check would prove nothing.
    expect(tcpPeers.has(upstream)).toBe(true);
    expect(tcpPeers.has(store)).toBe(true);
    expect(stub.requests.some((r) => r.isSummary)).toBe(true);
  });
});
