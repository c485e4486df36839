// Proxy overhead (issue 2 item 7): non-streamed 8 KB chat requests (a) direct to the stub, (b) through the bare
// proxy of bare-proxy.ts, (c) through the sidecar, (d) through the real LiteLLM proxy when its venv is present
// (issue 19, litellm-peer.ts), at 1 and 64 connections with autocannon, in interleaved rounds
// (the machine is shared and noisy); medians of the rounds are reported. Then a streaming case: time to the first
// body byte, sequential requests. Every server is a child process of its own (the sidecar is the built main.js,
// exactly what `npm start` runs) so that autocannon alone owns this process's event loop.
// Knobs: BENCH_ROUNDS (5), BENCH_SECONDS (3 per measurement), BENCH_STREAM_REQUESTS (150 per target per round),
// BENCH_PROFILE=1 (the sidecar runs with --cpu-prof; a self-time summary is printed), BENCH_BASELINE (a directory
// holding an earlier build, dist/ included: its sidecar is (e), measured in the same rounds).
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import autocannon from 'autocannon';
import { Pool } from 'undici';

import { litellmVenv, startLitellmPeer } from './litellm-peer';
import { report, TARGETS, type LoadFigures, type TargetName } from './overhead-report';
import { summariseProfile } from './profile';
import {
  baselineBuild,
  cpuSeconds,
  envNumber,
  filler,
  jsonUrl,
  machineLine,
  startChild,
  startSidecarChild,
  summarise,
  writeResults,
  type ChildServer,
} from './support';

const PATH = '/v1/chat/completions';

/** A chat request of `bytes` bytes of JSON: a system prompt and a few turns, as an agent's early turn looks. */
export function chatBody(bytes: number, stream: boolean): string {
  const messages = [
    { role: 'system', content: filler(1200, 1) },
    { role: 'user', content: filler(1500, 2) },
    { role: 'assistant', content: filler(1500, 3) },
    { role: 'user', content: '' },
  ];
  const base = JSON.stringify({ model: 'stub-model', messages, stream, max_tokens: 64 });
  const last = messages[messages.length - 1]!;
  last.content = filler(Math.max(0, bytes - Buffer.byteLength(base)), 4);
  return JSON.stringify({ model: 'stub-model', messages, stream, max_tokens: 64 });
}

function load(
  url: string,
  connections: number,
  seconds: number,
  body: string,
  pid?: number,
  headers: Record<string, string> = {},
): Promise<LoadFigures> {
  const samples: number[] = [];
  let errors = 0;
  const cpuBefore = cpuSeconds(pid);
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${url}${PATH}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
        connections,
        duration: seconds,
      },
      (err: unknown, result) => {
        if (err) return reject(err instanceof Error ? err : new Error('autocannon failed', { cause: err }));
        const p = summarise(samples);
        // autocannon's own histogram rounds to whole milliseconds; the per-response times are exact.
        resolve({
          p50: p.p50,
          p99: p.p99,
          rps: samples.length / result.duration,
          errors: errors + result.errors + result.non2xx,
          cpuMs: ((cpuSeconds(pid) - cpuBefore) * 1000) / Math.max(1, samples.length),
        });
      },
    );
    instance.on('response', (_client, status, _bytes, time) => {
      if (status >= 200 && status < 300) samples.push(time);
      else errors += 1;
    });
  });
}

/** Time to the first body byte of a streamed answer, `n` sequential requests on one kept-alive connection. */
async function ttfb(
  url: string,
  n: number,
  body: string,
  headers: Record<string, string> = {},
): Promise<number[]> {
  const pool = new Pool(url, { connections: 1 });
  const out: number[] = [];
  try {
    for (let i = 0; i < n; i += 1) {
      const start = performance.now();
      const res = await pool.request({
        path: PATH,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      let first = 0;
      for await (const _chunk of res.body) if (first === 0) first = performance.now() - start;
      if (res.statusCode !== 200) throw new Error(`streamed request answered ${res.statusCode}`);
      out.push(first);
    }
  } finally {
    await pool.close();
  }
  return out;
}

/**
 * Waits (at most 10 s) until the server just measured is idle: a slow peer (LiteLLM answers 64 connections far more
 * slowly than it accepts them) is still working through its backlog when autocannon stops, and that CPU would
 * otherwise be charged to whichever target runs next on these two shared cores.
 */
async function settle(pid: number | undefined): Promise<void> {
  const until = performance.now() + 10_000;
  let last = cpuSeconds(pid);
  while (performance.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
    const now = cpuSeconds(pid);
    if (!(now - last > 0.02)) return;
    last = now;
  }
}

/** Each round visits the targets in a rotated order, so no target always runs first (or right after warm-up). */
function rotation(round: number, targets: readonly TargetName[]): TargetName[] {
  return targets.map((_t, i) => targets[(i + round) % targets.length]!);
}

interface Servers {
  targets: TargetName[];
  urls: Partial<Record<TargetName, string>>;
  pids: Partial<Record<TargetName, number>>;
  headers: Partial<Record<TargetName, Record<string, string>>>;
  peerLine: string;
  children: { stop(): Promise<void> }[];
  dataDir: string;
  profileDir?: string;
}

async function startServers(profile: boolean): Promise<Servers> {
  const stub = await startChild({
    script: join(__dirname, 'stub-child.js'),
    args: ['1000000'],
    pick: jsonUrl,
  });
  const bare = await startChild({
    script: join(__dirname, 'bare-proxy.js'),
    args: [stub.url],
    pick: jsonUrl,
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'cg-bench-'));
  const profileDir = profile ? join(dataDir, 'profile') : undefined;
  const env: Record<string, string> = {
    GUARDIAN_UPSTREAM_URL: `${stub.url}/v1`,
    GUARDIAN_HOST: '127.0.0.1',
    GUARDIAN_PORT: '0',
    GUARDIAN_DATA_DIR: dataDir,
    OTEL_EXPORTER_OTLP_ENDPOINT: '',
  };
  const sidecar = await startChild({
    script: join(__dirname, '..', 'apps', 'guardian', 'src', 'main.js'),
    env,
    nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    pick: jsonUrl,
  });
  const servers: Servers = {
    targets: [...TARGETS],
    urls: { direct: stub.url, bare: bare.url, sidecar: sidecar.url },
    pids: { direct: stub.child.pid, bare: bare.child.pid, sidecar: sidecar.child.pid },
    headers: {},
    peerLine: 'LiteLLM peer: skipped (no venv; see docs/BENCHMARKS.md)',
    children: [sidecar, bare, stub] as ChildServer[],
    dataDir,
    profileDir,
  };
  const baseline = baselineBuild();
  if (baseline) {
    const baseDir = mkdtempSync(join(tmpdir(), 'cg-bench-base-'));
    const base = await startSidecarChild({ main: baseline, upstream: `${stub.url}/v1`, dataDir: baseDir });
    servers.targets.push('baseline');
    servers.urls.baseline = base.url;
    servers.pids.baseline = base.child.pid;
    servers.children.unshift({
      stop: async () => {
        await base.stop();
        rmSync(baseDir, { recursive: true, force: true });
      },
    });
  }
  const venv = litellmVenv();
  if (venv) {
    const peer = await startLitellmPeer(venv, stub.url, 'stub-model');
    servers.targets.push('litellm');
    servers.urls.litellm = peer.url;
    servers.pids.litellm = peer.pid;
    servers.headers.litellm = peer.headers;
    servers.peerLine = `LiteLLM peer: litellm ${peer.version} from ${venv.replace(process.env.HOME ?? '~', '~')}, one uvicorn worker (its default)`;
    servers.children.unshift(peer);
  }
  return servers;
}

function loadLine(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

export async function run(): Promise<void> {
  const rounds = envNumber('BENCH_ROUNDS', 5);
  const seconds = envNumber('BENCH_SECONDS', 3);
  const streamN = envNumber('BENCH_STREAM_REQUESTS', 150);
  const profile = process.env.BENCH_PROFILE === '1';
  const body = chatBody(8192, false);
  const streamBody = chatBody(8192, true);
  const servers = await startServers(profile);
  const lines: string[] = [machineLine('overhead bench'), `load average at start: ${loadLine()}`];
  try {
    // Warm-up: JIT, keep-alive pools, and the sidecar's one-time window detection for the model.
    const { targets } = servers;
    const url = (t: TargetName): string => servers.urls[t] ?? '';
    const head = (t: TargetName): Record<string, string> => servers.headers[t] ?? {};
    for (const t of targets) await load(url(t), 16, 1, body, undefined, head(t));
    for (const t of targets) await ttfb(url(t), 50, streamBody, head(t));
    const figures: Record<string, LoadFigures[]> = {};
    const stream: Partial<Record<TargetName, number[]>> = {};
    for (let r = 0; r < rounds; r += 1) {
      for (const connections of [1, 64]) {
        for (const t of rotation(r, targets)) {
          const f = await load(url(t), connections, seconds, body, servers.pids[t], head(t));
          (figures[`${t}@${connections}`] ??= []).push(f);
          await settle(servers.pids[t]);
        }
      }
      for (const t of rotation(r, targets))
        (stream[t] ??= []).push(summarise(await ttfb(url(t), streamN, streamBody, head(t))).p50);
      process.stderr.write(`overhead: round ${r + 1}/${rounds} done\n`);
    }
    lines.push(servers.peerLine);
    lines.push(
      ...report({ targets, figures, stream, rounds, seconds, streamN, bytes: Buffer.byteLength(body) }),
    );
    lines.push(`load average at end: ${loadLine()}`);
  } finally {
    for (const c of servers.children) await c.stop();
    if (servers.profileDir) {
      const files = readdirSync(servers.profileDir).filter((f) => f.endsWith('.cpuprofile'));
      for (const f of files) lines.push(...summariseProfile(join(servers.profileDir, f)));
    }
    rmSync(servers.dataDir, { recursive: true, force: true });
  }
  const path = writeResults('overhead.txt', lines);
  process.stdout.write(`${lines.join('\n')}\n(written to ${path})\n`);
}

if (require.main === module) {
  run().catch((err: unknown) => {
    process.stderr.write(
      `overhead bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  });
}
