// Where the tests find the programs they drive besides Node: an explicit variable, else PATH, else what
// test/support/obtain-tools.sh (run by `npm test` before jest) left in the user cache.
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

/** Keep in step with PROMTOOL_VERSION in obtain-tools.sh. */
export const PROMTOOL_VERSION = 'v0.316.0';

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
