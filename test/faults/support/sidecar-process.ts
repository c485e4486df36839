import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { MUST_COME_MS } from '../../support/wait';

/** The built sidecar, exactly what `npm start` runs (`npm test` builds before jest). */
export const MAIN = join(__dirname, '..', '..', '..', 'dist', 'apps', 'guardian', 'src', 'main.js');

export interface SidecarProcess {
  /** `http://127.0.0.1:PORT` from the startup line. */
  url: string;
  child: ChildProcess;
  /** Every stdout line so far (pino JSON lines). */
  stdout: string[];
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Resolves with the exit code and signal once the process is gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): void;
}

/**
 * Starts `dist/apps/guardian/src/main.js` with only the given environment (plus PATH), and waits for the startup
 * line naming the address it listens on (an info line: GUARDIAN_LOG_LEVEL must be info or lower). Rejects with the process's stderr when it exits first.
 */
export function startSidecarProcess(
  env: Record<string, string>,
  opts: { nodeArgs?: string[]; timeoutMs?: number } = {},
): Promise<SidecarProcess> {
  if (!existsSync(MAIN))
    throw new Error('dist is missing: run `npm run build` first (`npm test` builds before jest)');
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), MAIN], {
    env: { PATH: process.env.PATH ?? '', GUARDIAN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sidecar did not start: ${stderr.slice(0, 2000)}`));
    }, opts.timeoutMs ?? MUST_COME_MS); // a hang guard: the startup line must come, however busy the machine
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`sidecar exited (${code ?? signal}) before listening: ${stderr.slice(0, 2000)}`));
    });
    let found = false;
    createInterface({ input: child.stdout }).on('line', (line) => {
      stdout.push(line);
      if (found) return;
      const url = /context-guardian \S+ on (http:\/\/[^\s]+) ->/.exec(line)?.[1];
      if (!url) return;
      found = true;
      clearTimeout(timer);
      resolve({
        url,
        child,
        stdout,
        stderr: () => stderr,
        exited,
        kill: (signal) => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        },
      });
    });
  });
}
