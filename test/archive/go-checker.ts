// Builds test/archive/tlog-check (Go, golang.org/x/mod from the Go module proxy) once per source version into the user
// cache, as test/deploy/helm.ts's tools are, and runs it on a log folder. The go command is test/support/tools.ts's
// findGo(): PATH's when it is 1.26 or later, else the toolchain obtain-tools.sh fetched.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

import { findGo, howToObtainGo } from '../support/tools';

const SOURCE = join(__dirname, 'tlog-check');

function goBinary(): string {
  const go = findGo();
  if (go === undefined) throw new Error(`the Go checker needs ${howToObtainGo()}`);
  return go;
}

/** The built checker, cached by the hash of its sources. */
export function tlogChecker(): string {
  const hash = createHash('sha256');
  for (const f of ['main.go', 'go.mod', 'go.sum']) hash.update(readFileSync(join(SOURCE, f)));
  const cache = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  const dir = join(cache, 'context-guardian', `tlog-check-${hash.digest('hex').slice(0, 12)}`);
  const binary = join(dir, 'tlog-check');
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const temp = `${binary}.${process.pid}.tmp`;
  const built = spawnSync(goBinary(), ['build', '-o', temp, '.'], { cwd: SOURCE, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`go build of the checker failed: ${built.stderr}`);
  // Two jest workers may build at once: the rename makes either one's binary the cached one, whole.
  renameSync(temp, binary);
  return binary;
}

/** Runs the checker; `ok` with its line, or its failure. */
export function runChecker(logDir: string, vkey: string, earlier?: string): { ok: boolean; out: string } {
  const args = [logDir, vkey, ...(earlier === undefined ? [] : [earlier])];
  const res = spawnSync(tlogChecker(), args, { encoding: 'utf8' });
  if (res.error !== undefined) throw res.error;
  return { ok: res.status === 0, out: `${res.stdout}${res.stderr}`.trim() };
}
