// Memo benchmark (issue 7 §6): the latency of a memo-hit turn (an over-budget request whose memoized summary is
// reused, no summariser call) through a sidecar whose memo is in Redis, beside the same through a sidecar with
// the in-process memo. Target: Redis adds <= 1 ms at p50. Each sidecar is its own process, as deployed (an
// in-process sidecar would share this process's event loop with the client and the stub); both front one stub
// and take turns request by request, so drift on the machine hits both alike. Redis: REDIS_URL when set, else
// a `redis-server` from PATH on a free port. Iterations: BENCH_MEMO_ITERATIONS (default 1000). Prints and
// writes bench/results/memo.txt.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

import Redis from 'ioredis';

import { startStub } from '@guardian/stub-backend';

const WARMUP = 200;
const WORDS =
  'ledger invoice tenant migration schema rollback replica cursor batch export parser window'.split(' ');
// The startup line (apps/guardian/src/main.ts): "context-guardian <version> on http://host:port -> ..."
const STARTUP = /^context-guardian \S+ on (http:\/\/\S+) -> /;

interface Sidecar {
  name: string;
  url: string;
  child: ChildProcess;
  dataDir: string;
  /** Warnings the sidecar logged (a memo Redis outage is one). */
  warnings: string[];
  samples: number[];
}

interface Stats {
  summaries_reused: number;
  summariser_calls: number;
}

/** A session resumed over the budget: 14 turns of ~330 words; every repeat of it reuses the first summary. */
function requestBody(): string {
  const messages: { role: string; content: string }[] = [
    { role: 'system', content: 'You are a careful engineer helping with a billing service migration.' },
  ];
  let seed = 42;
  for (let turn = 1; turn <= 14; turn++) {
    const words = [`Step ${turn} of the migration.`];
    for (let i = 0; i < 330; i++) {
      seed = (seed * 1664525 + 1013904223) >>> 0;
      words.push(WORDS[seed % WORDS.length] ?? 'note');
    }
    messages.push({ role: 'user', content: words.join(' ') });
    messages.push({ role: 'assistant', content: `Done with step ${turn}.` });
  }
  messages.push({ role: 'user', content: 'And the next step?' });
  return JSON.stringify({ model: 'stub-model', messages, max_tokens: 16 });
}

async function turn(sidecar: Sidecar, body: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${sidecar.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-guardian-session': 'bench/memo-hit' },
    body,
  });
  await res.arrayBuffer();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`memo bench: ${sidecar.name} answered HTTP ${res.status}`);
  return ms;
}

async function stats(sidecar: Sidecar): Promise<Stats> {
  return (await (await fetch(`${sidecar.url}/guardian/stats`)).json()) as Stats;
}

/** The built sidecar from dist/, or its sources through the swc hook when this bench runs from source. */
function sidecarCommand(): string[] {
  if (!__filename.endsWith('.ts')) return [join(__dirname, '..', 'apps', 'guardian', 'src', 'main.js')];
  const root = join(__dirname, '..');
  return [
    '-r',
    join(root, 'test', 'support', 'swc-register.js'),
    join(root, 'apps', 'guardian', 'src', 'main.ts'),
  ];
}

async function startSidecar(name: string, env: Record<string, string>): Promise<Sidecar> {
  const dataDir = mkdtempSync(join(tmpdir(), `memo-bench-${name}-`));
  const child = spawn(process.execPath, sidecarCommand(), {
    env: {
      PATH: process.env.PATH,
      GUARDIAN_HOST: '127.0.0.1',
      GUARDIAN_PORT: '0',
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_RESERVE_OUTPUT: '1024',
      GUARDIAN_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const warnings: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`memo bench: sidecar ${name} exited (${code})`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const parsed = JSON.parse(line) as { level?: number; msg?: string };
      if ((parsed.level ?? 0) >= 40) warnings.push(parsed.msg ?? line);
      const match = STARTUP.exec(parsed.msg ?? '');
      if (match?.[1] !== undefined) resolve(match[1]);
    });
  });
  return { name, url, child, dataDir, warnings, samples: [] };
}

async function stopSidecar(sidecar: Sidecar): Promise<void> {
  const { child } = sidecar;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await exited;
  }
  rmSync(sidecar.dataDir, { recursive: true, force: true });
}

/** A Redis for the bench: REDIS_URL, else a throwaway redis-server on a free loopback port. */
async function benchRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const shared = process.env.REDIS_URL;
  if (shared !== undefined && shared !== '') return { url: shared, stop: async () => undefined };
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('memo bench: no free port');
  const url = `redis://127.0.0.1:${address.port}`;
  const child = spawn(
    'redis-server',
    ['--port', String(address.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const failed = new Promise<never>((_, reject) => child.once('error', reject));
  const ready = (async () => {
    for (let attempt = 1; ; attempt++) {
      const client = new Redis(url, {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      client.on('error', (err: unknown) => {
        // Refused until the server listens; the connect() below rejects with the same error.
        if (attempt >= 100) process.stderr.write(`memo bench: redis: ${String(err)}\n`);
      });
      try {
        await client.connect();
        if ((await client.ping()) === 'PONG') return;
      } catch (err) {
        if (attempt >= 100) throw new Error('memo bench: redis-server did not answer', { cause: err });
      } finally {
        client.disconnect();
      }
      await sleep(50);
    }
  })();
  await Promise.race([ready, failed]);
  return {
    url,
    stop: async () => {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** Runs the memo-hit benchmark, prints the figures and writes them to bench/results/memo.txt. */
export async function run(): Promise<void> {
  const iterations = Number(process.env.BENCH_MEMO_ITERATIONS ?? 1000);
  const redis = await benchRedis();
  const stub = await startStub({ window: 8192, maxRecorded: 1000 });
  const sidecars: Sidecar[] = [];
  const out: string[] = [];
  try {
    sidecars.push(await startSidecar('in-memory', { GUARDIAN_UPSTREAM_URL: stub.baseUrl }));
    sidecars.push(
      await startSidecar('redis', {
        GUARDIAN_UPSTREAM_URL: stub.baseUrl,
        GUARDIAN_REDIS_URL: redis.url,
        GUARDIAN_REDIS_PREFIX: `guardian-bench-${process.pid}:`,
        // A shared REDIS_URL keeps the bench's few keys for ten minutes only.
        GUARDIAN_MEMO_TTL: '600',
      }),
    );
    const body = requestBody();
    // The first turn summarises; every later one is a memo hit on the same cut.
    for (const s of sidecars) await turn(s, body);
    const before = await Promise.all(sidecars.map(stats));
    for (let i = 0; i < WARMUP + iterations; i++) {
      for (const s of i % 2 === 0 ? sidecars : [...sidecars].reverse()) {
        const ms = await turn(s, body);
        if (i >= WARMUP) s.samples.push(ms);
      }
    }
    const after = await Promise.all(sidecars.map(stats));
    sidecars.forEach((s, i) => {
      const calls = after[i]!.summariser_calls - before[i]!.summariser_calls;
      const reused = after[i]!.summaries_reused - before[i]!.summaries_reused;
      if (calls !== 0 || reused !== WARMUP + iterations) {
        throw new Error(
          `memo bench: ${s.name}: ${calls} summariser calls and ${reused} reuses; expected only hits`,
        );
      }
    });
    const figures = sidecars.map((s) => {
      const sorted = [...s.samples].sort((x, y) => x - y);
      return { name: s.name, p50: percentile(sorted, 50), p99: percentile(sorted, 99), warnings: s.warnings };
    });
    const [m, r] = figures as [(typeof figures)[0], (typeof figures)[0]];
    const added = r.p50 - m.p50;
    const load = loadavg()
      .map((x) => x.toFixed(2))
      .join(' ');
    out.push(
      `memo bench ${new Date().toISOString()} node ${process.version}, load average ${load}; memo-hit turn ` +
        `(chat, 29 messages ~6k tokens, summary reused, stub upstream on loopback, each sidecar its own ` +
        `process), n=${iterations} each after ${WARMUP} warm-up, interleaved`,
      `in-memory memo: p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms`,
      `redis memo (${redis.url.replace(/:[^@/]*@/, ':***@')}, GUARDIAN_REDIS_TIMEOUT_MS default): ` +
        `p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms; memo outage warnings during the run: ` +
        `${r.warnings.filter((w) => /redis/i.test(w)).length}`,
      `added by redis: p50 ${added.toFixed(2)} ms (target <= 1 ms: ${added <= 1 ? 'met' : 'MISSED'}), ` +
        `p99 ${(r.p99 - m.p99).toFixed(2)} ms`,
    );
  } finally {
    await Promise.all(sidecars.map(stopSidecar));
    await stub.close();
    await redis.stop();
  }
  const report = `${out.join('\n')}\n`;
  process.stdout.write(report);
  // From the repository root (npm run bench), whether run from source or from dist/.
  const results = join(process.cwd(), 'bench', 'results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'memo.txt'), report);
}

if (require.main === module) {
  void run();
}
