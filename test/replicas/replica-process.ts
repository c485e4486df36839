// A sidecar replica as a separate child process: the built `dist/apps/guardian/src/main.js`, configured only
// through GUARDIAN_* variables (ARCHITECTURE.md#configuration), as a pod behind a Kubernetes Service would run it
// (issue 7 §5).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { MUST_COME_MS } from '../support/wait';

const MAIN = join(__dirname, '..', '..', 'dist', 'apps', 'guardian', 'src', 'main.js');
/** A hang guard: the startup line must come, however busy the machine. */
const START_TIMEOUT_MS = MUST_COME_MS;
const STOP_TIMEOUT_MS = 5_000;
// The startup line (main.ts): "context-guardian <version> on http://host:port -> <upstream>; ..."
export const STARTUP = /^context-guardian \S+ on (http:\/\/\S+) -> /;

/** One pino JSON line of a replica's stdout. */
export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** pino's numeric level for `warn`. */
export const WARN = 40;

export interface Replica {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  /** Every JSON line written so far, in order. */
  readonly logs: LogLine[];
  /** Lines of stdout that were not JSON (there should be none) and everything on stderr. */
  readonly otherOutput: string[];
  /** SIGTERM, then SIGKILL if it has not exited in time. Safe to call twice. */
  stop(): Promise<void>;
}

export interface ReplicaOptions {
  /** GUARDIAN_* settings; GUARDIAN_PORT defaults to 0 (any free port, read back from the startup line). */
  env: Record<string, string>;
}

/** Fails with a clear message when the build the replicas run is missing. */
export function assertBuilt(): void {
  if (!existsSync(MAIN)) {
    throw new Error(
      `${MAIN} is missing: the replica tests run the built sidecar. Run \`npm run build\` first ` +
        '(`npm test` builds before running jest).',
    );
  }
}

/** Starts a replica and resolves once it logged its startup line (it listens by then). */
export async function startReplica(options: ReplicaOptions): Promise<Replica> {
  assertBuilt();
  const child = spawn(process.execPath, [MAIN], {
    env: childEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  const otherOutput: string[] = [];
  const started = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`replica did not log its startup line within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`replica exited (${code ?? signal}) before starting:\n${otherOutput.join('\n')}`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const parsed = parseLine(line);
      if (parsed === undefined) {
        otherOutput.push(line);
        return;
      }
      logs.push(parsed);
      const match = STARTUP.exec(parsed.msg);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
  });
  createInterface({ input: child.stderr }).on('line', (line) => otherOutput.push(line));
  try {
    const url = await started;
    return { url, logs, otherOutput, stop: () => stopChild(child) };
  } catch (err) {
    await stopChild(child);
    throw err;
  }
}

/** The replica's own environment: nothing GUARDIAN_* or OTEL_* leaks in from the shell that runs jest. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('GUARDIAN_') && !key.startsWith('OTEL_')) base[key] = value;
  }
  // Pre-compaction off unless a test asks for it: it runs behind answers and would race the next turn (stack.ts).
  return {
    ...base,
    GUARDIAN_HOST: '127.0.0.1',
    GUARDIAN_PORT: '0',
    GUARDIAN_PRECOMPACT_THRESHOLD: '0',
    ...env,
  };
}

function parseLine(line: string): LogLine | undefined {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value === 'object' && value !== null && 'msg' in value && 'level' in value) {
      return value as LogLine;
    }
    return undefined;
  } catch (err) {
    // Not JSON, so not a pino line: the caller keeps it in otherOutput, where a failing test shows it.
    if (err instanceof SyntaxError) return undefined;
    throw err;
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const stopped = await Promise.race([
    exited.then(() => true),
    sleep(STOP_TIMEOUT_MS, false, { ref: false }),
  ]);
  if (!stopped) {
    child.kill('SIGKILL');
    await exited;
  }
}

/** A loopback port nothing listens on (taken from the kernel, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/** Polls `probe` until it returns a value; for state that settles after a response. `timeoutMs` is a hang guard. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = MUST_COME_MS,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}
