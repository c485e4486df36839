import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { CACHE_DIR, SHARED_DIR } from './paths';
import { freePort, startProc, waitForHttp, type Proc } from './proc';

/** Where docs/WORKS_WITH.md builds llama-server: under the runner's cache in the home directory. */
export const DEFAULT_LLAMA_SERVER = join(CACHE_DIR, 'llama', 'src', 'build', 'bin', 'llama-server');
/** The tiny model in the project's shared folder (`../shared/models`, beside the checkout). */
export const DEFAULT_MODEL = join(SHARED_DIR, 'models', 'llama-2-tiny-random.gguf');

export interface Llama {
  url: string;
  version: string;
  proc: Proc;
  stop(): Promise<void>;
}

/** `llama-server --version` prints e.g. `version: 0.4.0-dev (build 1, commit 80fb11a)`; reported as `0.4.0-dev+80fb11a`. */
export function llamaVersion(bin: string): string {
  const out = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  const line = `${out.stdout ?? ''}\n${out.stderr ?? ''}`.split('\n').find((l) => l.startsWith('version:'));
  if (!line) return 'unknown';
  const m = /version:\s*(\S+).*commit\s+([0-9a-f]+)/.exec(line);
  return m ? `${m[1]}+${m[2]}` : line.slice('version:'.length).trim();
}

/**
 * llama-server on the tiny model exactly as ../shared/models/README.md says: a 8,192-token context above the
 * trained 4,096 (the override), one slot (shared slots fail mid-generation), EOS biased so replies stay short,
 * offline, loopback, a free port.
 */
export async function startLlama(opts: {
  bin: string;
  model: string;
  logPath: string;
  ctx?: number;
}): Promise<Llama> {
  if (!existsSync(opts.bin))
    throw new Error(`${opts.bin} is missing: build llama-server first (docs/WORKS_WITH.md)`);
  if (!existsSync(opts.model)) throw new Error(`${opts.model} is missing`);
  const port = await freePort();
  const args = [
    '-m',
    opts.model,
    '--override-kv',
    'llama.context_length=int:131072',
    '--ctx-size',
    String(opts.ctx ?? 8192),
    '-np',
    '1',
    '-ngl',
    '0',
    '-l',
    '2+1',
    '--offline',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
  ];
  const proc = startProc({ cmd: opts.bin, args, env: { PATH: process.env.PATH }, logPath: opts.logPath });
  const url = `http://127.0.0.1:${port}`;
  await Promise.race([
    waitForHttp(`${url}/health`, 60000),
    proc.exited.then((code) => {
      throw new Error(`llama-server exited (${String(code)}) before it was ready; see ${opts.logPath}`);
    }),
  ]);
  return { url, version: llamaVersion(opts.bin), proc, stop: () => proc.stop() };
}
