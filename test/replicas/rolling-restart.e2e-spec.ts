// Issue 30 item 1, "done when": a rolling restart of two replicas under steady 40 s SSE streams refuses no
// connection and cuts no stream. Two built sidecar processes behind a small readiness-probing proxy
// (readiness-proxy.ts) stand for a two-replica Deployment behind its Service: the contract under test is guardian's
// (serve while /readyz says 503, then close the listener, then let the streams finish), and processes let every
// phase be waited for by what a client sees, where compose replicas would add image builds and a proxy container to
// the CI budget and nothing to the contract. The compose side (`docker compose stop` with a 40 s stream open) is in
// test/deploy/live/compose.sh.
//
// Every stream is a real 40 s one: the stub spreads each answer's events over STREAM_MS. The replicas run with the
// shipped grace (GUARDIAN_SHUTDOWN_GRACE_SECONDS unset: 60 s, ADR 0121), and each old replica gets SIGTERM just as a
// new stream has begun on it, so that stream has a whole 40 s still to go: it completes only if the default grace
// carries it (with the grace at the old 25 s it ends in an error event and the test fails). That margin (about 20 s)
// is the product's own promise, checked as shipped; every phase of the test is waited for by what a client sees,
// and no clock of the test's decides anything. The drain is set wide (8 s, the chart's preStop wait plus guardian's
// drain), since it only has to cover the proxy's 50 ms probe seeing the 503.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { startSidecarProcess, type SidecarProcess } from '../faults/support/sidecar-process';
import { until } from '../support/wait';
import { ReadinessProxy } from './readiness-proxy';

const DRAIN_SECONDS = 8;
/** How long each streamed answer takes at the stub: the 40 s streams. */
const STREAM_MS = 40_000;
/** Clients streaming through the proxy without pause for the whole rollout. */
const CLIENTS = 4;
const CHAT = {
  model: 'stub-model',
  stream: true,
  messages: [{ role: 'user', content: 'Summarise the log.' }],
};

/** One streamed answer through the proxy: who served it, and how it ended. */
interface Streamed {
  /** The replica's origin, from the proxy's `x-routed-to`. */
  backend: string;
  status: number;
  /** Ended with `data: [DONE]` and carries no error event. */
  complete: boolean;
  /** Whether its replica's listener was seen closed before it ended: it outlived the drain. */
  outlivedDrain: boolean;
}

describe('a rolling restart of two replicas behind a readiness-probing proxy, under steady 40 s streams', () => {
  let stub: StubBackend;
  let proxy: ReadinessProxy;
  let dataDir: string;
  const processes: SidecarProcess[] = [];
  /** Origins of the replicas whose listener the test has seen closed. */
  const closed = new Set<string>();

  const start = async (): Promise<SidecarProcess> => {
    const p = await startSidecarProcess({
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_SHUTDOWN_DRAIN_SECONDS: String(DRAIN_SECONDS),
    });
    processes.push(p);
    proxy.add(p.url);
    await until('the proxy to find the new replica ready', () => proxy.isReady(p.url));
    return p;
  };

  /**
   * Opens a stream through the proxy (or straight to one replica); resolves once its head is in, with the replica
   * that serves it.
   */
  const openStream = async (to = proxy.url): Promise<{ backend: string; done: Promise<Streamed> }> => {
    const res = await fetch(`${to}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(CHAT),
    });
    const backend = res.headers.get('x-routed-to') ?? new URL(to).origin;
    const done = (async (): Promise<Streamed> => {
      let text = '';
      let cut = false;
      try {
        text = await res.text();
      } catch {
        cut = true;
      }
      const complete = !cut && text.endsWith('data: [DONE]\n\n') && !text.includes('"error"');
      return { backend, status: res.status, complete, outlivedDrain: closed.has(backend) };
    })();
    return { backend, done };
  };

  const refused = async (url: string): Promise<boolean> => {
    try {
      await (await fetch(`${url}/readyz`, { headers: { connection: 'close' } })).arrayBuffer();
      return false;
    } catch (err) {
      return (err as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';
    }
  };

  beforeAll(async () => {
    stub = await startStub({ window: 8192, streamMs: STREAM_MS });
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

    // Steady traffic through the proxy for the whole rollout: each client opens a 40 s stream after another.
    let rolling = true;
    const begun: { backend: string; done: Promise<Streamed> }[] = [];
    const client = async (): Promise<void> => {
      while (rolling) {
        const s = await openStream();
        begun.push(s);
        await s.done;
      }
    };
    const clients = Array.from({ length: CLIENTS }, () => client());

    // As a Deployment rolls (maxSurge 1, maxUnavailable 0): a new replica is started and ready, then an old one gets
    // SIGTERM and leaves the proxy once its listener closes; the next goes on while it finishes its streams.
    const old = [a, b];
    const fresh: { replica: SidecarProcess; stream: Promise<Streamed> }[] = [];
    const restarted: SidecarProcess[] = [];
    for (const replica of old) {
      restarted.push(await start());
      const origin = new URL(replica.url).origin;
      // The signal goes the moment a stream has begun on this replica (a client that connected just before the
      // rollout reached it): that stream has its whole 40 s still to go.
      const last = await openStream(replica.url);
      fresh.push({ replica, stream: last.done });
      replica.kill('SIGTERM');
      // The proxy takes the replica out once /readyz says 503; its listener closes only after the drain.
      await until('the proxy to drop the draining replica', () => !proxy.isReady(replica.url));
      await until('the replica to close its listener', () => refused(replica.url));
      closed.add(origin);
      proxy.remove(replica.url);
    }
    // Each old replica exits 0 once its streams are done, within the default grace.
    for (const replica of old) expect(await replica.exited).toEqual({ code: 0, signal: null });
    // The new replicas take streams; then the clients stop after the one they are in.
    await until('each new replica to serve a stream', () =>
      restarted.every((r) => begun.some((s) => s.backend === new URL(r.url).origin)),
    );
    rolling = false;
    await Promise.all(clients);

    expect(proxy.failures).toEqual([]);
    const all = await Promise.all(begun.map((s) => s.done));
    expect(all.filter((s) => s.status !== 200 || !s.complete)).toEqual([]);
    // The stream begun as its replica got SIGTERM ran on past the drain, into the grace, and ended whole.
    for (const { replica, stream } of fresh) {
      expect(await stream).toEqual({
        backend: new URL(replica.url).origin,
        status: 200,
        complete: true,
        outlivedDrain: true,
      });
    }
    // No replica reached the grace's end with a stream still open.
    for (const p of processes)
      expect(p.stdout.filter((line) => line.includes('shutdown grace over'))).toEqual([]);
  });
});
