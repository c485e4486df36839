// Where the tests find the programs they drive besides Node: an explicit variable, else PATH, else what
// test/support/obtain-tools.sh (run by `npm test` before jest) left in the user cache.
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

/** Keep in step with PROMTOOL_VERSION in obtain-tools.sh. */
export const PROMTOOL_VERSION = 'v0.316.0';
/** Keep in step with GO_VERSION and GO_MINOR in obtain-tools.sh: test/archive/tlog-check's go.mod says go 1.26.0. */
const GO_VERSION = '1.26.8';
const GO_MINOR = 26;

const CACHE_DIR = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'context-guardian');

const CACHED: Record<Tool, string> = {
  promtool: join(CACHE_DIR, `promtool-${PROMTOOL_VERSION}`, 'promtool'),
  'redis-server': join(CACHE_DIR, 'redis-server', 'redis-server'),
};
const OVERRIDE: Record<Tool, string> = { promtool: 'PROMTOOL', 'redis-server': 'REDIS_SERVER' };

export type Tool = 'promtool' | 'redis-server';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false; // not there, or not executable: the next place is tried
  }
}

/** The program to spawn for `tool`, or undefined when neither the variable, PATH nor the cache has it. */
export function findTool(tool: Tool): string | undefined {
  const given = process.env[OVERRIDE[tool]];
  if (given !== undefined && given !== '') return given;
  const onPath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => dir !== '')
    .map((dir) => join(dir, tool))
    .find(executable);
  return onPath ?? (executable(CACHED[tool]) ? CACHED[tool] : undefined);
}

/** What to tell someone whose machine lacks `tool`. */
export function howToObtain(tool: Tool): string {
  return `${tool} not found (${OVERRIDE[tool]}, PATH, ${CACHED[tool]}): npm test obtains it (bash test/support/obtain-tools.sh)`;
}

/** The minor version a go command reports of itself (GOTOOLCHAIN=local: its own, not one it would switch to). */
function goMinor(go: string): number {
  const res = spawnSync(go, ['env', 'GOVERSION'], {
    cwd: '/',
    encoding: 'utf8',
    env: { ...process.env, GOTOOLCHAIN: 'local' },
  });
  return Number(/^go1\.(\d+)/.exec(res.stdout ?? '')?.[1] ?? 0);
}

const CACHED_GO = join(CACHE_DIR, `go-${GO_VERSION}`, 'bin', 'go');

/**
 * The go command to build with: GO when set, else `go` on PATH when it is 1.26 or later, else the toolchain
 * obtain-tools.sh fetched from the Go module proxy into the user cache; undefined when there is none of these.
 */
export function findGo(): string | undefined {
  const given = process.env.GO;
  if (given !== undefined && given !== '') return given;
  const onPath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => dir !== '')
    .map((dir) => join(dir, 'go'))
    .find(executable);
  if (onPath !== undefined && goMinor(onPath) >= GO_MINOR) return onPath;
  return executable(CACHED_GO) ? CACHED_GO : undefined;
}

/** What to tell someone whose machine has no Go new enough. */
export function howToObtainGo(): string {
  return `Go 1.${GO_MINOR} or later not found (GO, PATH, ${CACHED_GO}): npm test fetches it from the Go module proxy (bash test/support/obtain-tools.sh)`;
}
