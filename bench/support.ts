// Shared helpers of the benchmarks: statistics, child servers, result files.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? Number.NaN;
}

export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

export interface Summary {
  p50: number;
  p99: number;
  n: number;
}

export function summarise(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), n: sorted.length };
}

/** Runs `fn` `n` times (after `warmup` untimed runs) and returns the milliseconds of each run. */
export function timeMany(n: number, warmup: number, fn: () => void): number[] {
  for (let i = 0; i < warmup; i += 1) fn();
  const out: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const start = performance.now();
    fn();
    out.push(performance.now() - start);
  }
  return out;
}

export function ms(value: number, digits = 3): string {
  return Number.isFinite(value) ? `${value.toFixed(digits)} ms` : 'n/a';
}

export function int(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** CPU seconds (user + system, all threads) a process has used so far, from /proc (Linux). */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch (err) {
    // No /proc (not Linux): the CPU column reads n/a, the latency and throughput figures stand on their own.
    process.stderr.write(`overhead: no CPU figures (${err instanceof Error ? err.message : String(err)})\n`);
    return Number.NaN;
  }
}

/** Reads a positive number from the environment, else the default. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined ? Number.NaN : Number(raw);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

export function machineLine(name: string): string {
  const cpu = cpus()[0]?.model ?? 'unknown cpu';
  return `${name} ${new Date().toISOString()} node ${process.version}, ${cpus().length} x ${cpu}, ${loadLine()}`;
}

/** The load average now (1, 5, 15 minutes): the machine is shared, and a figure is read beside the load it ran at. */
export function loadLine(): string {
  return `load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`;
}

/** Writes the lines to bench/results/<file> under the working directory (npm runs scripts at the package root). */
export function writeResults(file: string, lines: readonly string[]): string {
  const dir = process.env.BENCH_RESULTS_DIR ?? join(process.cwd(), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, file);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

export interface ChildServer {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts a node script as a child process and waits for its first stdout line that `pick` turns into a URL.
 * Later output is drained (a full pipe would stall the child).
 */
export function startChild(opts: {
  script: string;
  args?: string[];
  env?: Record<string, string>;
  nodeArgs?: string[];
  pick: (line: string) => string | undefined;
  timeoutMs?: number;
}): Promise<ChildServer> {
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.script, ...(opts.args ?? [])], {
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${opts.script} did not start: ${stderr.join('').slice(0, 2000)}`));
    }, opts.timeoutMs ?? 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${opts.script} exited with ${code}: ${stderr.join('').slice(0, 2000)}`));
    });
    const lines = createInterface({ input: child.stdout });
    let found = false;
    lines.on('line', (line) => {
      if (found) return;
      const url = opts.pick(line);
      if (!url) return;
      found = true;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({ url, child, stop: () => stopChild(child) });
    });
  });
}

/** The URL a child server announces: `{"url": ...}` (stub, bare proxy) or the sidecar's startup line. */
export function jsonUrl(line: string): string | undefined {
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

/**
 * The directory of a second build to measure beside this one in the same run (BENCH_BASELINE: a checkout of an
 * earlier commit, built, whose `dist/` holds its own main.js), or undefined.
 */
export function baselineBuild(): string | undefined {
  const dir = process.env.BENCH_BASELINE;
  if (!dir) return undefined;
  const main = join(dir, 'dist', 'apps', 'guardian', 'src', 'main.js');
  if (!existsSync(main)) throw new Error(`BENCH_BASELINE=${dir}: no built sidecar at ${main}`);
  return main;
}

/** The built sidecar of this checkout. */
export const SIDECAR_MAIN = join(__dirname, '..', 'apps', 'guardian', 'src', 'main.js');

/** A built sidecar in a process of its own (as `npm start` runs it), in front of `upstream`, with `env` added. */
export function startSidecarChild(opts: {
  main: string;
  upstream: string;
  dataDir: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
}): Promise<ChildServer> {
  return startChild({
    script: opts.main,
    env: {
      GUARDIAN_UPSTREAM_URL: opts.upstream,
      GUARDIAN_HOST: '127.0.0.1',
      GUARDIAN_PORT: '0',
      GUARDIAN_DATA_DIR: opts.dataDir,
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
      ...opts.env,
    },
    nodeArgs: opts.nodeArgs,
    pick: jsonUrl,
  });
}

/** SIGTERM (the sidecar shuts down gracefully and writes its --cpu-prof file then), SIGKILL after 10 s. */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** The plain words of filler prose, here and in the fault suite's traffic (test/faults/support/traffic.ts). */
export const FILLER_WORDS: readonly string[] = [
  'deploy',
  'schema',
  'rollback',
  'cluster',
  'window',
  'summary',
  'replica',
  'latency',
  'timeout',
  'migration',
  'index',
  'budget',
  'request',
  'handler',
  'config',
  'retry',
];

/** An `n`-character filler text of plain words, deterministic for a seed. */
export function filler(n: number, seed: number): string {
  const words = FILLER_WORDS;
  let s = seed >>> 0 || 1;
  const parts: string[] = [];
  let length = 0;
  while (length < n) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const w = words[s % words.length] ?? 'x';
    parts.push(w);
    length += w.length + 1;
  }
  return parts.join(' ').slice(0, n);
}
