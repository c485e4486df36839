// Proxy overhead (issue 2 item 7): non-streamed 8 KB chat requests (a) direct to the stub, (b) through the bare
// proxy of bare-proxy.ts, (c) through the sidecar, at 1 and 64 connections with autocannon, in interleaved rounds
// (the machine is shared and noisy); medians of the rounds are reported. Then a streaming case: time to the first
// body byte, sequential requests. Every server is a child process of its own (the sidecar is the built main.js,
// exactly what `npm start` runs) so that autocannon alone owns this process's event loop.
// Knobs: BENCH_ROUNDS (5), BENCH_SECONDS (3 per measurement), BENCH_STREAM_REQUESTS (150 per target per round),
// BENCH_PROFILE=1 (the sidecar runs with --cpu-prof; a self-time summary is printed).
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import autocannon from 'autocannon';
import { Pool } from 'undici';

import { summariseProfile } from './profile';
import {
  cpuSeconds,
  envNumber,
  filler,
  int,
  machineLine,
  median,
  ms,
  startChild,
  summarise,
  writeResults,
  type ChildServer,
} from './support';

type TargetName = 'direct' | 'bare' | 'sidecar';
const TARGETS: readonly TargetName[] = ['direct', 'bare', 'sidecar'];
const LABEL: Record<TargetName, string> = { direct: '(a) direct', bare: '(b) bare', sidecar: '(c) sidecar' };
const PATH = '/v1/chat/completions';

interface LoadFigures {
  p50: number;
  p99: number;
  rps: number;
  errors: number;
  /** CPU milliseconds the server under test spent per answered request (the stub for `direct`). */
  cpuMs: number;
}

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
): Promise<LoadFigures> {
  const samples: number[] = [];
  let errors = 0;
  const cpuBefore = cpuSeconds(pid);
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${url}${PATH}`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
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
async function ttfb(url: string, n: number, body: string): Promise<number[]> {
  const pool = new Pool(url, { connections: 1 });
  const out: number[] = [];
  try {
    for (let i = 0; i < n; i += 1) {
      const start = performance.now();
      const res = await pool.request({
        path: PATH,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
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

/** Each round visits the targets in a rotated order, so no target always runs first (or right after warm-up). */
function rotation(round: number): TargetName[] {
  return TARGETS.map((_t, i) => TARGETS[(i + round) % TARGETS.length]!);
}

function jsonUrl(line: string): string | undefined {
  try {
    const parsed = JSON.parse(line) as { url?: unknown; msg?: unknown };
    if (typeof parsed.url === 'string') return parsed.url;
    const m = typeof parsed.msg === 'string' ? / on (http:\/\/\S+) -> /.exec(parsed.msg) : null;
    return m?.[1];
  } catch {
    // Not a JSON line (a warning on stdout): keep waiting for the line that names the URL.
    return undefined;
  }
}

interface Servers {
  urls: Record<TargetName, string>;
  pids: Record<TargetName, number | undefined>;
  children: ChildServer[];
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
  return {
    urls: { direct: stub.url, bare: bare.url, sidecar: sidecar.url },
    pids: { direct: stub.child.pid, bare: bare.child.pid, sidecar: sidecar.child.pid },
    children: [sidecar, bare, stub],
    dataDir,
    profileDir,
  };
}

function loadLine(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

function ratio(a: number, b: number): string {
  return b > 0 ? `${(a / b).toFixed(2)}x` : 'n/a';
}

function verdict(ok: boolean): string {
  return ok ? 'met' : 'MISSED';
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
    for (const t of TARGETS) await load(servers.urls[t], 16, 1, body);
    for (const t of TARGETS) await ttfb(servers.urls[t], 50, streamBody);
    const figures: Record<string, LoadFigures[]> = {};
    const stream: Record<TargetName, number[]> = { direct: [], bare: [], sidecar: [] };
    for (let r = 0; r < rounds; r += 1) {
      for (const connections of [1, 64]) {
        for (const t of rotation(r)) {
          const f = await load(servers.urls[t], connections, seconds, body, servers.pids[t]);
          (figures[`${t}@${connections}`] ??= []).push(f);
        }
      }
      for (const t of rotation(r))
        stream[t].push(summarise(await ttfb(servers.urls[t], streamN, streamBody)).p50);
      process.stderr.write(`overhead: round ${r + 1}/${rounds} done\n`);
    }
    lines.push(...report({ figures, stream, rounds, seconds, streamN, bytes: Buffer.byteLength(body) }));
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

function report(r: {
  figures: Record<string, LoadFigures[]>;
  stream: Record<TargetName, number[]>;
  rounds: number;
  seconds: number;
  streamN: number;
  bytes: number;
}): string[] {
  const med = (t: TargetName, c: number, k: keyof LoadFigures) =>
    median((r.figures[`${t}@${c}`] ?? []).map((f) => f[k]));
  const lines = [
    `non-streamed chat requests of ${r.bytes} bytes; ${r.rounds} interleaved rounds of ${r.seconds} s per target and connection count; medians of the rounds`,
    'servers: stub, bare proxy and sidecar (built main.js, default settings) each in its own process; autocannon in the bench process',
    'CPU/request: CPU time (user+system, /proc) of the server under test per answered request: the stub for (a), the proxy for (b) and (c)',
  ];
  for (const c of [1, 64]) {
    lines.push(`-- ${c} connection${c > 1 ? 's' : ''}`);
    for (const t of TARGETS) {
      const errors = (r.figures[`${t}@${c}`] ?? []).reduce((n, f) => n + f.errors, 0);
      lines.push(
        `${LABEL[t].padEnd(12)} p50 ${ms(med(t, c, 'p50'))}  p99 ${ms(med(t, c, 'p99'))}  ${int(med(t, c, 'rps')).padStart(6)} req/s  ${ms(med(t, c, 'cpuMs'))} CPU/request${errors ? `  (${errors} errors)` : ''}`,
      );
    }
    for (const k of ['p50', 'p99', 'rps'] as const) {
      lines.push(
        `ratio ${k}: c/a ${ratio(med('sidecar', c, k), med('direct', c, k))}, c/b ${ratio(med('sidecar', c, k), med('bare', c, k))}`,
      );
    }
  }
  const added = (k: 'p50' | 'p99', t: TargetName) => med(t, 1, k) - med('direct', 1, k);
  const p50x = added('p50', 'sidecar') / added('p50', 'bare');
  const p99x = added('p99', 'sidecar') / added('p99', 'bare');
  const rpsShare = med('sidecar', 64, 'rps') / med('bare', 64, 'rps');
  lines.push(
    '-- targets',
    `1 conn p50: bare adds ${ms(added('p50', 'bare'))}, sidecar adds ${ms(added('p50', 'sidecar'))} = ${p50x.toFixed(2)}x (target <= 1.5x): ${verdict(p50x <= 1.5)}`,
    `1 conn p99: bare adds ${ms(added('p99', 'bare'))}, sidecar adds ${ms(added('p99', 'sidecar'))} = ${p99x.toFixed(2)}x (target <= 2x): ${verdict(p99x <= 2)}`,
    `64 conns: sidecar serves ${(rpsShare * 100).toFixed(1)}% of the bare proxy's req/s (target >= 80%): ${verdict(rpsShare >= 0.8)}`,
    `CPU per request at 64 conns: bare ${ms(med('bare', 64, 'cpuMs'))}, sidecar ${ms(med('sidecar', 64, 'cpuMs'))} = ${ratio(med('sidecar', 64, 'cpuMs'), med('bare', 64, 'cpuMs'))} (what bounds req/s on a machine to itself)`,
    `-- streaming, time to first body byte (${r.streamN} sequential requests per target per round; median of the rounds' p50)`,
  );
  const ttfb = (t: TargetName) => median(r.stream[t]);
  for (const t of TARGETS) {
    lines.push(
      `${LABEL[t].padEnd(12)} ttfb p50 ${ms(ttfb(t))}${t === 'direct' ? '' : `  added over direct ${ms(ttfb(t) - ttfb('direct'))}`}`,
    );
  }
  return lines;
}

if (require.main === module) {
  run().catch((err: unknown) => {
    process.stderr.write(
      `overhead bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  });
}
