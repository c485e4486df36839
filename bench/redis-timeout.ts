// Redis command bound (issue 28 item 6): the round-trip distribution of the memo's own commands (a lock SET NX PX,
// a GET of the entry, the unlock DEL) from this process to a local redis-server, on the machine as it is (run it where
// the sidecar runs, under the load it sees). GUARDIAN_REDIS_TIMEOUT_MS must sit above the slow tail of this, or a
// busy node reads a lock as "Redis down", fails open and a second replica summarises the same stretch. Redis:
// REDIS_URL when set, else a `redis-server` from PATH on a free port. Commands: BENCH_REDIS_COMMANDS (default
// 30000). Prints and writes bench/results/redis-timeout.txt.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

import Redis from 'ioredis';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

export async function run(): Promise<void> {
  const n = Number(process.env.BENCH_REDIS_COMMANDS ?? 30000);
  let url = process.env.REDIS_URL;
  let server: ReturnType<typeof spawn> | undefined;
  if (!url) {
    const port = await freePort();
    server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    url = `redis://127.0.0.1:${port}`;
    await sleep(300);
  }
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const samples: number[] = [];
    for (let i = 0; i < n; i++) {
      const key = `bench:lock:${i % 64}`;
      const t0 = performance.now();
      if (i % 3 === 0) await redis.set(key, 'r', 'PX', 30000, 'NX');
      else if (i % 3 === 1) await redis.get(key);
      else await redis.del(key);
      samples.push(performance.now() - t0);
    }
    samples.sort((a, b) => a - b);
    const over = (ms: number) => samples.filter((s) => s > ms).length;
    const lines = [
      `redis-timeout bench ${new Date().toISOString()} node ${process.version}, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; n=${n} memo commands (SET NX PX, GET, DEL), one at a time, ${url}`,
      `p50 ${quantile(samples, 0.5).toFixed(3)} ms, p99 ${quantile(samples, 0.99).toFixed(3)} ms, ` +
        `p99.9 ${quantile(samples, 0.999).toFixed(3)} ms, max ${samples.at(-1)!.toFixed(3)} ms`,
      `over 50 ms: ${over(50)}, over 100 ms: ${over(100)}, over 250 ms: ${over(250)}, over 500 ms: ${over(500)}`,
    ];
    const text = lines.join('\n') + '\n';
    process.stdout.write(text);
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(join(__dirname, 'results', 'redis-timeout.txt'), text);
  } finally {
    redis.disconnect();
    server?.kill();
  }
}
