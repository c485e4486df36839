// Helpers of the soak and paste-memory benchmarks: the processes under test, their memory, their event loop, and
// conversations on the three routes guardian reads.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { filler, startChild, type ChildServer } from './support';

export type Route = 'chat' | 'messages' | 'responses';
export const ROUTES: readonly Route[] = ['chat', 'messages', 'responses'];
export const PATHS: Record<Route, string> = {
  chat: '/v1/chat/completions',
  messages: '/v1/messages',
  responses: '/v1/responses',
};

/** Resident set size of a process in bytes (Linux /proc), NaN when it is gone. */
export function rssBytes(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? Number.NaN : Number(kb) * 1024;
  } catch {
    // The process exited (a paste that killed it): no figure, and the caller reports the exit.
    return Number.NaN;
  }
}

/** Where a process's resident memory is, by kind of mapping (Linux /proc/<pid>/smaps), in bytes. */
export interface MemoryMap {
  /** Mapped files: the node binary's text and data, shared libraries (file-backed, shareable). */
  files: number;
  /** `[heap]`: glibc malloc's main arena (the brk heap). */
  brk: number;
  /** Anonymous mappings: V8's heap, mmap'd Buffers, the malloc arenas of other threads, thread stacks. */
  anonymous: number;
}

export function memoryMap(pid: number | undefined): MemoryMap | undefined {
  if (pid === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    // The process exited, or no /proc (not Linux): the breakdown reads n/a, RSS stands on its own.
    return undefined;
  }
  const out: MemoryMap = { files: 0, brk: 0, anonymous: 0 };
  let kind: keyof MemoryMap = 'anonymous';
  for (const line of text.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const name = head[1] ?? '';
      kind = name.startsWith('/') ? 'files' : name === '[heap]' ? 'brk' : 'anonymous';
    } else if (line.startsWith('Rss:')) {
      out[kind] += Number(/(\d+) kB/.exec(line)?.[1] ?? 0) * 1024;
    }
  }
  return out;
}

/** Samples a process's RSS every `everyMs` until stopped: start, peak (and where it was, by mapping), last. */
export class RssSampler {
  readonly start: number;
  peak: number;
  last: number;
  atPeak: MemoryMap | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pid: number | undefined,
    everyMs = 50,
    private readonly mapAtPeak = false,
  ) {
    this.start = rssBytes(pid);
    this.peak = this.start;
    this.last = this.start;
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  sample(): void {
    const now = rssBytes(this.pid);
    if (!Number.isFinite(now)) return;
    this.last = now;
    if (!(now <= this.peak)) {
      this.peak = now;
      if (this.mapAtPeak) this.atPeak = memoryMap(this.pid) ?? this.atPeak;
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }
}

/** `files 47 MB, [heap] 70 MB, anonymous 180 MB`, or n/a. */
export function memoryMapLine(map: MemoryMap | undefined): string {
  if (!map) return 'mappings n/a';
  return `mapped files ${mb(map.files)}, malloc [heap] ${mb(map.brk)}, anonymous ${mb(map.anonymous)}`;
}

export function mb(bytes: number): string {
  return Number.isFinite(bytes) ? `${(bytes / 1024 / 1024).toFixed(0)} MB` : 'n/a';
}

/** Gauges of the sidecar's own /metrics, by name (prom-client resets the event-loop histogram on each scrape). */
export async function scrapeMany(url: string, names: readonly string[]): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const name of names) {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    out.set(name, line === undefined ? Number.NaN : Number(line.slice(name.length + 1)));
  }
  return out;
}

/** One gauge of the sidecar's own /metrics. */
export async function scrape(url: string, name: string): Promise<number> {
  return (await scrapeMany(url, [name])).get(name) ?? Number.NaN;
}

export interface Sidecar extends ChildServer {
  dataDir: string;
  pid: number | undefined;
}

/** The built sidecar (`dist/apps/guardian/src/main.js`, what `npm start` runs) in a child process. */
export async function startSidecar(
  upstream: string,
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
  main = join(__dirname, '..', 'apps', 'guardian', 'src', 'main.js'),
): Promise<Sidecar> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cg-soak-'));
  const child = await startChild({
    script: main,
    env: {
      GUARDIAN_UPSTREAM_URL: `${upstream}/v1`,
      GUARDIAN_HOST: '127.0.0.1',
      GUARDIAN_PORT: '0',
      GUARDIAN_DATA_DIR: dataDir,
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
      ...env,
    },
    nodeArgs,
    pick: (line) => / on (http:\/\/\S+) -> /.exec(line)?.[1],
    timeoutMs: 30_000,
  });
  return {
    ...child,
    dataDir,
    pid: child.child.pid,
    async stop() {
      await child.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The stub upstream in a process of its own (bench/stub-child.ts). */
export function startStubChild(window: number): Promise<ChildServer> {
  return startChild({
    script: join(__dirname, 'stub-child.js'),
    args: [String(window)],
    pick: (line) => {
      try {
        return (JSON.parse(line) as { url?: string }).url;
      } catch {
        // Not the line naming the URL.
        return undefined;
      }
    },
  });
}

/** The body of turn `n` of conversation `seed` on `route`: the whole history a client resends. */
export function turnBody(
  route: Route,
  seed: number,
  n: number,
  stream: boolean,
  words = 900,
): Record<string, unknown> {
  const pairs: { role: 'user' | 'assistant'; content: string }[] = [];
  for (let i = 0; i < n; i++) {
    pairs.push({ role: 'user', content: `Turn ${i} of session ${seed}. ${filler(words, seed * 1000 + i)}` });
    if (i < n - 1)
      pairs.push({ role: 'assistant', content: `Answer ${i}. ${filler(words / 3, seed * 1000 + i + 500)}` });
  }
  const system = `You are the assistant of session ${seed}.`;
  if (route === 'chat')
    return { model: 'stub-model', stream, messages: [{ role: 'system', content: system }, ...pairs] };
  if (route === 'messages') return { model: 'stub-model', max_tokens: 64, stream, system, messages: pairs };
  return { model: 'stub-model', stream, store: false, instructions: system, input: pairs };
}

/** Sends one request and reads the whole answer; the status, or why there was none. */
export async function send(
  url: string,
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
  method = 'POST',
): Promise<string> {
  try {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: method === 'POST' ? { 'content-type': 'application/json', ...headers } : headers,
      body: method === 'POST' ? body : undefined,
      signal: AbortSignal.timeout(120_000),
    });
    await res.arrayBuffer();
    return String(res.status);
  } catch (err) {
    const e = err as { name?: string; cause?: { code?: string } };
    return e.name === 'TimeoutError' ? 'timeout' : (e.cause?.code ?? e.name ?? 'error');
  }
}
