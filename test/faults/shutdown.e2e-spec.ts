import { readFileSync } from 'node:fs';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { startSidecarProcess, type SidecarProcess } from './support/sidecar-process';
import { mountTmpfs, type Tmpfs } from './support/tmpfs';
import { Conversation, PATHS } from './support/traffic';

// The seal monitor with thousands of runs of its own (issue 12 defect 3): it used to re-verify every run of the
// process after each compaction, queueing checks without bound: 25.6 s of CPU in 30 s with 3,000 runs, false
// "hash chain broken" alarms about its own writes in flight, and a SIGTERM that took 59 s (once over 4 minutes)
// while /healthz kept answering, past Kubernetes' 30 s grace. The built sidecar compacts one conversation per
// session, each one a run of its own, while /metrics is polled; then it gets SIGTERM mid-traffic.
// 3,000 runs in the long tier (the figure), 300 in `npm test`.

const RUNS = process.env.LONG === '1' ? 3000 : 300;
const CONCURRENCY = 8;
/** A quiet spell after the traffic, in which an idle sidecar should spend next to no CPU. */
const IDLE_MS = 3000;
// How long SIGTERM takes to exit is printed, not asserted: a fixed limit (10 s here before) decided the verdict on
// a busy machine, where eight compacting requests in flight at the signal can take longer to finish than on a quiet
// one. What made shutdown slow is asserted where it needs no clock: stop() aborts a full verify instead of waiting
// for it (seal-monitor.int-spec.ts), and here the process must exit by itself, with code 0, while traffic goes on.

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

describe(`SIGTERM with ${RUNS} runs of the process's own`, () => {
  let stub: StubBackend;
  let volume: Tmpfs;
  let sidecar: SidecarProcess;
  beforeAll(async () => {
    stub = await startStub({ window: 4096, maxRecorded: 100 });
    volume = await mountTmpfs(512 * 1024 * 1024);
    sidecar = await startSidecarProcess({
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: volume.dir,
      GUARDIAN_RESERVE_OUTPUT: '512',
      // No drain: what this measures is that the seal check never holds the exit (rolling-shutdown.e2e-spec.ts
      // covers the drain).
      GUARDIAN_SHUTDOWN_DRAIN_SECONDS: '0',
    });
  });
  afterAll(async () => {
    sidecar?.kill('SIGKILL');
    await sidecar?.exited;
    await stub?.close();
    await volume?.unmount();
  });

  it('compacts every session with no false seal alarm, then exits by itself mid-traffic', async () => {
    const pid = sidecar.child.pid!;
    const cpuStart = cpuSeconds(pid);
    const gauge: number[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const text = await (await fetch(`${sidecar.url}/metrics`)).text();
        const line = text.split('\n').find((l) => l.startsWith('guardian_archive_seal_ok '));
        gauge.push(Number(line?.split(' ')[1]));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const statuses: number[] = [];
    let next = 0;
    const send = async (k: number) => {
      const body = new Conversation('chat', k, 200).body(12, false);
      const res = await fetch(`${sidecar.url}${PATHS.chat}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-guardian-session': `run-${k}` },
        body: JSON.stringify(body),
      });
      await res.arrayBuffer();
      return res.status;
    };
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < RUNS) statuses.push(await send(next++));
      }),
    );
    const cpu = cpuSeconds(pid) - cpuStart;
    // Idle now: nothing new to verify, so the monitor should cost next to nothing. Printed, not asserted (a figure
    // is the benchmarks' business); that it reads only what changed is asserted in seal-monitor.int-spec.ts.
    const idleStart = cpuSeconds(pid);
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idleCpu = cpuSeconds(pid) - idleStart;
    polling = false;
    await poller;
    const stats = (await (await fetch(`${sidecar.url}/guardian/stats`)).json()) as {
      compactions_performed: number;
      archive_deferred: number;
    };
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(stats).toMatchObject({ compactions_performed: RUNS, archive_deferred: 0 });
    expect(gauge.length).toBeGreaterThan(0);
    expect(gauge.filter((g) => g !== 1)).toEqual([]);
    expect(sidecar.stdout.join('\n')).not.toContain('hash chain broken');

    // SIGTERM while new sessions keep compacting: the process finishes what is in flight and exits by itself.
    let more = true;
    const traffic = (async () => {
      for (let k = RUNS; more; k++) await send(k).catch(() => (more = false));
    })();
    await new Promise((r) => setTimeout(r, 200));
    const sent = Date.now();
    sidecar.kill('SIGTERM');
    const exit = await sidecar.exited;
    const tookMs = Date.now() - sent;
    more = false;
    await traffic;
    process.stdout.write(
      `seal monitor, ${RUNS} runs: ${cpu.toFixed(1)} s of sidecar CPU for ${RUNS} compactions, ` +
        `${idleCpu.toFixed(2)} s in the ${IDLE_MS / 1000} s idle after them, ` +
        `${gauge.length} polls of guardian_archive_seal_ok all 1, SIGTERM to exit ${tookMs} ms\n`,
    );
    expect(exit).toEqual({ code: 0, signal: null });
  });
});
