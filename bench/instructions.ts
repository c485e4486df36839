// Instructions per request (issue 26: "the overhead bench's CPU per request is not worse"), counted by valgrind's
// callgrind instead of timed. A count does not move with what else the two shared cores are doing, where CPU seconds
// per request moved by 10-20% between runs of one build (docs/BENCHMARKS.md, "The house in stages"), so a build and
// its baseline (BENCH_BASELINE, as in overhead.ts) compare on one figure each. The sidecar runs under callgrind with
// V8's compiler and GC on its one thread (`--single-threaded`), so what is counted is the request path's own work,
// JIT-compiled: warm-up requests first, then rounds of counted requests (callgrind_control zeroes the counters
// before a round and dumps them after). The stub and the load run natively and are not counted.
// Knobs: BENCH_IR_WARMUP (2000 requests), BENCH_IR_ROUNDS (4), BENCH_IR_REQUESTS (400 per round),
// BENCH_IR_CONNECTIONS (1 and 64).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { Pool } from 'undici';

import { chatBody } from './overhead';
import {
  SIDECAR_MAIN,
  baselineBuild,
  envNumber,
  int,
  jsonUrl,
  machineLine,
  median,
  startChild,
  writeResults,
} from './support';

const PATH = '/v1/chat/completions';

interface Counted {
  child: ChildProcess;
  url: string;
  outDir: string;
  dataDir: string;
}

function hasCallgrind(): boolean {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
    execFileSync('callgrind_control', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A built sidecar under callgrind, in front of `upstream`; resolves once it prints the URL it listens on. */
function startCounted(main: string, upstream: string): Promise<Counted> {
  const outDir = mkdtempSync(join(tmpdir(), 'cg-bench-ir-'));
  const dataDir = mkdtempSync(join(tmpdir(), 'cg-bench-ir-data-'));
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${join(outDir, 'callgrind.out.%p')}`,
      '--dump-instr=no',
      process.execPath,
      ...(process.env.BENCH_IR_NODE_FLAGS ?? '--single-threaded').split(' ').filter(Boolean),
      main,
    ],
    {
      env: {
        ...process.env,
        GUARDIAN_UPSTREAM_URL: upstream,
        GUARDIAN_HOST: '127.0.0.1',
        GUARDIAN_PORT: '0',
        GUARDIAN_DATA_DIR: dataDir,
        OTEL_EXPORTER_OTLP_ENDPOINT: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const stderr: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`the sidecar under callgrind exited with ${code}: ${stderr.join('').slice(-2000)}`)),
    );
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const url = jsonUrl(line);
      if (url === undefined) return;
      child.removeAllListeners('exit');
      lines.removeAllListeners('line');
      child.stdout.resume();
      resolve({ child, url, outDir, dataDir });
    });
  });
}

async function stopCounted(c: Counted): Promise<void> {
  if (c.child.exitCode === null && c.child.signalCode === null) {
    const exited = new Promise((r) => c.child.once('exit', r));
    c.child.kill('SIGTERM');
    await exited;
  }
  rmSync(c.outDir, { recursive: true, force: true });
  rmSync(c.dataDir, { recursive: true, force: true });
}

/** `n` requests over `connections` kept-alive connections; every answer must be a 200. */
async function send(url: string, n: number, connections: number, body: string): Promise<void> {
  const pool = new Pool(url, { connections, pipelining: 1 });
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < n) {
          next += 1;
          const res = await pool.request({
            path: PATH,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          });
          await res.body.text();
          if (res.statusCode !== 200) throw new Error(`the sidecar answered ${res.statusCode}`);
        }
      }),
    );
  } finally {
    await pool.close();
  }
}

/** The instructions callgrind counted since the last zeroing, from the dump it writes now. */
function dumpTotal(c: Counted): number {
  execFileSync('callgrind_control', ['-d', String(c.child.pid)], { stdio: 'ignore' });
  const files = readdirSync(c.outDir)
    .map((f) => join(c.outDir, f))
    .sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs);
  const text = readFileSync(files.at(-1)!, 'utf8');
  const m = /^totals: (\d+)/m.exec(text) ?? /^summary: (\d+)/m.exec(text);
  if (m === null) throw new Error(`no totals line in ${files.at(-1)}`);
  return Number(m[1]);
}

/** Instructions per request in each counted round. */
async function measure(
  c: Counted,
  connections: number,
  body: string,
  warmup: number,
  rounds: number,
  requests: number,
): Promise<number[]> {
  await send(c.url, warmup, connections, body);
  const out: number[] = [];
  for (let r = 0; r < rounds; r += 1) {
    execFileSync('callgrind_control', ['-z', String(c.child.pid)], { stdio: 'ignore' });
    await send(c.url, requests, connections, body);
    out.push(dumpTotal(c) / requests);
  }
  return out;
}

export async function run(): Promise<void> {
  const lines: string[] = [machineLine('instructions per request (callgrind)')];
  const log = (line: string): void => {
    lines.push(line);
    process.stdout.write(`${line}\n`);
  };
  if (!hasCallgrind()) {
    log('skipped: valgrind (callgrind) is not installed here (Debian: apt-get install valgrind)');
    writeResults('instructions.txt', lines);
    return;
  }
  const warmup = envNumber('BENCH_IR_WARMUP', 2000);
  const rounds = envNumber('BENCH_IR_ROUNDS', 4);
  const requests = envNumber('BENCH_IR_REQUESTS', 400);
  const connectionsList = (process.env.BENCH_IR_CONNECTIONS ?? '1,64').split(',').map(Number);
  const body = chatBody(8192, false);
  const builds: [string, string][] = [['sidecar', SIDECAR_MAIN]];
  const baseline = baselineBuild();
  if (baseline !== undefined) builds.push(['baseline', baseline]);
  log(
    `8 KB non-streamed chat requests; ${warmup} warm-up requests, then ${rounds} rounds of ${requests} counted; ` +
      `node --single-threaded under callgrind${baseline ? `; baseline ${process.env.BENCH_BASELINE}` : ''}`,
  );
  const stub = await startChild({
    script: join(__dirname, 'stub-child.js'),
    args: ['1000000'],
    pick: jsonUrl,
  });
  try {
    for (const connections of connectionsList) {
      const medians = new Map<string, number>();
      for (const [name, main] of builds) {
        const counted = await startCounted(main, `${stub.url}/v1`);
        try {
          const perRound = await measure(counted, connections, body, warmup, rounds, requests);
          medians.set(name, median(perRound));
          log(
            `${connections} conn(s)  ${name.padEnd(8)}  ${int(median(perRound))} instructions/request ` +
              `(rounds: ${perRound.map((v) => int(v)).join(', ')})`,
          );
        } finally {
          await stopCounted(counted);
        }
      }
      const base = medians.get('baseline');
      if (base !== undefined)
        log(`${connections} conn(s)  sidecar vs baseline: ${(medians.get('sidecar')! / base).toFixed(3)}x`);
    }
  } finally {
    await stub.stop();
  }
  writeResults('instructions.txt', lines);
}
