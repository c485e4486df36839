import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createServer } from 'node:net';

/** A child process whose stdout and stderr go to one log file (never to the terminal: they may hold message text). */
export interface Proc {
  child: ChildProcess;
  logPath: string;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

export function startProc(opts: {
  cmd: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  logPath: string;
}): Proc {
  const log = createWriteStream(opts.logPath);
  const child = spawn(opts.cmd, opts.args, {
    env: opts.env,
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    // A spawn failure (missing binary) surfaces as exit null; its message is written to the log for the report.
    child.once('error', (err) => {
      log.write(`spawn error: ${err.message}\n`);
      resolve(null);
    });
  });
  return {
    child,
    logPath: opts.logPath,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      log.end();
    },
  };
}

/** Runs a command to completion with a time limit; returns its exit code and captured output. */
export async function runProc(opts: {
  cmd: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs: number;
  input?: string;
}): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(opts.cmd, opts.args, {
      env: opts.env,
      cwd: opts.cwd,
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout?.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
    child.stderr?.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    const timer = setTimeout(() => {
      timedOut = true;
      // The whole process group: CLIs start helpers (language servers, sandboxes) that would outlive them.
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, opts.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr: `${stderr}spawn error: ${err.message}\n`, timedOut });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Polls `url` until it answers `status` or `timeoutMs` passes. */
export async function waitForHttp(url: string, timeoutMs: number, status = 200): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < until) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === status) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      // Not listening yet: keep polling until the deadline, then report the last reason.
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} not ready after ${timeoutMs} ms (${last})`);
}

export async function getJson<T = Record<string, unknown>>(url: string): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}
