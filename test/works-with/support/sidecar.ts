import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { REPO_ROOT } from './paths';
import { freePort, getJson, startProc, waitForHttp, type Proc } from './proc';
import { MUST_COME_MS } from '../../support/wait';

export const SIDECAR_MAIN = join(REPO_ROOT, 'dist', 'apps', 'guardian', 'src', 'main.js');

/** The built sidecar (`npm run build`) running as a child process, as a user would start it. */
export interface Sidecar {
  /** Origin, e.g. `http://127.0.0.1:41234`. */
  url: string;
  dataDir: string;
  proc: Proc;
  stats(): Promise<Record<string, unknown>>;
  /** The compaction log lines (ARCHITECTURE.md#files): counts only, no message text. */
  logLines(): Record<string, unknown>[];
  stop(): Promise<void>;
}

export async function startSidecar(opts: {
  upstreamUrl: string;
  dataDir: string;
  logPath: string;
  env?: Record<string, string>;
}): Promise<Sidecar> {
  if (!existsSync(SIDECAR_MAIN)) throw new Error(`${SIDECAR_MAIN} is missing: run \`npm run build\` first`);
  const port = await freePort();
  // Only what the sidecar needs: no inherited GUARDIAN_* from the shell (a stray GUARDIAN_NUM_CTX would hide
  // window detection), no proxies (every call must stay on loopback).
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: opts.dataDir,
    GUARDIAN_UPSTREAM_URL: opts.upstreamUrl,
    GUARDIAN_HOST: '127.0.0.1',
    GUARDIAN_PORT: String(port),
    GUARDIAN_DATA_DIR: opts.dataDir,
    GUARDIAN_LOG_LEVEL: 'info',
    ...opts.env,
  };
  const proc = startProc({ cmd: process.execPath, args: [SIDECAR_MAIN], env, logPath: opts.logPath });
  const url = `http://127.0.0.1:${port}`;
  await Promise.race([
    waitForHttp(`${url}/readyz`, MUST_COME_MS), // a hang guard: readiness must come
    proc.exited.then((code) => {
      throw new Error(`sidecar exited (${String(code)}) before it was ready; see ${opts.logPath}`);
    }),
  ]);
  return {
    url,
    dataDir: opts.dataDir,
    proc,
    stats: () => getJson(`${url}/guardian/stats`),
    logLines: () => readJsonl(join(opts.dataDir, 'log')),
    stop: () => proc.stop(),
  };
}

function readJsonl(dir: string): Record<string, unknown>[] {
  if (!existsSync(dir)) return [];
  const out: Record<string, unknown>[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.jsonl'))) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      if (line.trim()) out.push(JSON.parse(line) as Record<string, unknown>);
    }
  }
  return out;
}
