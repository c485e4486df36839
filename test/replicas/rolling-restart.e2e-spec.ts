// Issue 30 item 1, "done when": a rolling restart of two replicas under steady SSE streams refuses no connection and
// cuts no stream. Two built sidecar processes behind a small readiness-probing proxy (readiness-proxy.ts) stand for a
// two-replica Deployment behind its Service: the contract under test is guardian's (serve while /readyz says 503,
// then close the listener, then let the streams finish), and processes let every phase be waited for by what a client
// sees, where compose replicas would add image builds and a proxy container to the CI budget and nothing to the
// contract. The compose side (`docker compose stop` with a stream open) is in test/deploy/live/compose.sh.
//
// Long streams are held by the stub after their first event and let go only once their replica's listener has
// closed: a stream outlives the drain, as the 40 s streams did, without a clock deciding anything. The drain
// is set wide, so a busy machine only makes the test slower.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { startSidecarProcess, type SidecarProcess } from '../faults/support/sidecar-process';
import { until } from '../support/wait';
import { ReadinessProxy } from './readiness-proxy';

const DRAIN_SECONDS = 8;
const GRACE_SECONDS = 60;
const CHAT = {
  model: 'stub-model',
  stream: true,
  messages: [{ role: 'user', content: 'Summarise the log.' }],
};

/** A streamed answer read to its end: complete when it ends with `[DONE]` and carries no error event. */
interface Streamed {
  status: number;
  complete: boolean;
}

async function openStream(url: string): Promise<{ status: number; done: Promise<Streamed> }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(CHAT),
  });
  const done = (async (): Promise<Streamed> => {
    let text = '';
    try {
      text = await res.text();
    } catch {
      return { status: res.status, complete: false };
    }
    return { status: res.status, complete: text.endsWith('data: [DONE]\n\n') && !text.includes('"error"') };
  })();
  return { status: res.status, done };
}

async function refused(url: string): Promise<boolean> {
  try {
    await (await fetch(`${url}/readyz`, { headers: { connection: 'close' } })).arrayBuffer();
    return false;
  } catch (err) {
    return (err as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';
  }
}

describe('a rolling restart of two replicas behind a readiness-probing proxy', () => {
  let stub: StubBackend;
  let proxy: ReadinessProxy;
  let dataDir: string;
  const processes: SidecarProcess[] = [];

  const start = async (): Promise<SidecarProcess> => {
    const p = await startSidecarProcess({
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_SHUTDOWN_DRAIN_SECONDS: String(DRAIN_SECONDS),
      GUARDIAN_SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS),
    });
    processes.push(p);
    proxy.add(p.url);
    await until('the proxy to find the new replica ready', () => proxy.isReady(p.url));
    return p;
  };

  beforeAll(async () => {
    stub = await startStub({ window: 8192 });
    proxy = await ReadinessProxy.start();
    dataDir = await mkdtemp(join(tmpdir(), 'cg-rolling-'));
  });
  afterAll(async () => {
    for (const p of processes) p.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.exited));
    await proxy?.close();
    await stub?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('refuses no connection and cuts no stream, and each old replica exits 0', async () => {
    const a = await start();
    const b = await start();
    // One long stream on each replica (round-robin: the first to a, the second to b), held past its replica's drain.
    const long = [];
    for (const replica of [a, b]) {
      const hold = stub.holdNextStream();
      const stream = await openStream(proxy.url);
      await hold.firstEventSent;
      long.push({ replica, hold, stream });
    }
    expect(proxy.routed).toEqual([a.url, b.url].map((u) => new URL(u).origin));

    // Steady traffic through the proxy for the whole rollout: two clients, one stream after another.
    let rolling = true;
    const steady: Streamed[] = [];
    const client = async () => {
      while (rolling) {
        const s = await openStream(proxy.url);
        steady.push(await s.done);
      }
    };
    const clients = [client(), client()];
    const served = (n: number) => until(`${n} more steady streams`, () => steady.length >= n);

    const restarted: SidecarProcess[] = [];
    for (const { replica, hold } of long) {
      await served(steady.length + 4);
      replica.kill('SIGTERM');
      // The proxy takes the replica out once /readyz says 503; its listener closes only after the drain.
      await until('the proxy to drop the draining replica', () => !proxy.isReady(replica.url));
      await until('the replica to close its listener', () => refused(replica.url));
      proxy.remove(replica.url);
      // The long stream outlived the drain; it finishes now, during the grace.
      hold.release();
      expect(await replica.exited).toEqual({ code: 0, signal: null });
      restarted.push(await start());
    }
    await served(steady.length + 4);
    rolling = false;
    await Promise.all(clients);

    expect(proxy.failures).toEqual([]);
    for (const { stream } of long) {
      expect(stream.status).toBe(200);
      expect(await stream.done).toEqual({ status: 200, complete: true });
    }
    expect(steady.length).toBeGreaterThan(8);
    expect(steady.filter((s) => s.status !== 200 || !s.complete)).toEqual([]);
    // The new replicas took traffic.
    for (const r of restarted) expect(proxy.routed).toContain(new URL(r.url).origin);
  }, 600_000);
});
