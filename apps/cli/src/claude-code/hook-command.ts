import { accessSync, constants, existsSync, realpathSync } from 'node:fs';
import * as path from 'node:path';

/**
 * The folder this copy of the tools lives in: the package root of a clone, of `npm install -g`, or of npx's cache.
 * Found from this file upwards (`dist/apps/cli/...` when built, `apps/cli/...` from source) by the bin it ships.
 */
export function installRoot(from: string = __dirname): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (
      existsSync(path.join(dir, 'package.json')) &&
      existsSync(path.join(dir, 'bin', 'context-guardian-claude-code.js'))
    )
      return dir;
    if (path.dirname(dir) === dir) return undefined;
  }
}

function realpath(file: string): string | undefined {
  try {
    return realpathSync(file);
  } catch {
    // A dangling link or a file that went away finds nothing: the caller falls back to the absolute path.
    return undefined;
  }
}

/** The first executable `name` on `PATH`, as a shell would find it; undefined when there is none. */
export function onPath(name: string, pathVar: string | undefined): string | undefined {
  for (const dir of (pathVar ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here (or not executable): the shell would look in the next folder too.
      continue;
    }
  }
  return undefined;
}

/** POSIX shell quoting, only where the word needs it: Claude Code runs a hook's command through a shell. */
export function shellWord(word: string): string {
  return /^[\w./@%+=:,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * How a hook (or the MCP registration) written now runs `tool` later (issue 30 item 10): the bare name only when
 * `PATH` already finds this very install (after `npm link` or `npm install -g .`), otherwise `node <absolute bin>` of
 * the install it was written from, so a hook from a clone works without PATH and fails loudly if the clone moves.
 */
export function toolCommand(
  tool: string,
  env: Record<string, string | undefined>,
  root = installRoot(),
): string {
  if (root === undefined) return tool;
  const bin = path.join(root, 'bin', `${tool}.js`);
  const found = onPath(tool, env.PATH);
  const self = realpath(bin);
  if (found !== undefined && self !== undefined && realpath(found) === self) return tool;
  return `node ${shellWord(bin)}`;
}

/** The word a shell reads from `'...'` (with `'\\''` inside) or a bare word. */
function unquote(word: string): string {
  return word.startsWith("'") ? word.slice(1, -1).replaceAll(`'\\''`, "'") : word;
}

/**
 * Why a hook command `install` could have written would not run now, or undefined when it would (or when it is a
 * custom `--command` this cannot judge): the bin it names is gone, its install was never built, or the bare name is
 * not on PATH. `status` reports it, since Claude Code shows a failing hook only as it runs.
 */
export function whyNotRunnable(command: string, env: Record<string, string | undefined>): string | undefined {
  const tool = 'context-guardian-claude-code';
  const byFile = /^node\s+('(?:[^']|'\\'')*'|\S+)\s+(?:capture|resume)\s*$/.exec(command);
  if (byFile) {
    const file = unquote(byFile[1]!);
    if (!file.endsWith(`${tool}.js`)) return undefined;
    if (!existsSync(file)) return `${file} is missing`;
    const root = path.dirname(path.dirname(file));
    const entry = path.join(root, 'dist', 'apps', 'cli', 'src', 'claude-code', 'main.js');
    return existsSync(entry) ? undefined : `${root} is not built (npm ci && npm run build there)`;
  }
  if (new RegExp(`^${tool}\\s`).test(command) && onPath(tool, env.PATH) === undefined)
    return `${tool} is not on PATH (npm link in a built clone, or install --apply again from one)`;
  return undefined;
}
