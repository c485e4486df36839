import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';

import { EXIT, type ExitCode } from '../common/exit-codes';
import type { HookIo } from './hook-io';
import { lineDiff } from './line-diff';
import { toolCommand } from './hook-command';
import { hooksSnippet, mcpAddCommand, mcpRemoveCommand, mergeHooks, removeHooks } from './settings-hooks';
import { writeFileAtomic } from './snapshot-store';
import { isErrno } from './fs-errors';

export const SettingsFlagsSchema = z.object({
  scope: z.enum(['user', 'project', 'local']).default('user'),
  settings: z.string().min(1).optional(),
});
export const InstallFlagsSchema = SettingsFlagsSchema.extend({
  apply: z.boolean().default(false),
  /** How Claude Code runs the tool; by default the install this runs from (toolCommand). */
  command: z.string().min(1).optional(),
});
export type SettingsFlags = z.infer<typeof SettingsFlagsSchema>;
export type InstallFlags = z.infer<typeof InstallFlagsSchema>;

/** Claude Code's settings files: user (`$CLAUDE_CONFIG_DIR` or ~/.claude), project, local (settings docs). */
export function settingsPath(flags: SettingsFlags, io: HookIo): string {
  if (flags.settings !== undefined) return path.resolve(io.cwd(), flags.settings);
  if (flags.scope === 'project') return path.join(io.cwd(), '.claude', 'settings.json');
  if (flags.scope === 'local') return path.join(io.cwd(), '.claude', 'settings.local.json');
  const configDir = io.env.CLAUDE_CONFIG_DIR?.trim();
  return path.join(
    configDir !== undefined && configDir !== '' ? configDir : path.join(io.home, '.claude'),
    'settings.json',
  );
}

/** The settings file's text, or null when it does not exist yet. */
export async function readSettingsText(file: string): Promise<string | null> {
  try {
    return await fsp.readFile(file, 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return null;
    throw err;
  }
}

function stamp(date: Date): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${date.getFullYear()}${two(date.getMonth() + 1)}${two(date.getDate())}-${two(date.getHours())}${two(date.getMinutes())}${two(date.getSeconds())}`;
}

/** Copies the file to `<name>.bak-<YYYYMMDD-HHMMSS>` (a `-2`... suffix if that exists); returns the copy. */
async function backup(file: string, text: string, now: Date): Promise<string> {
  for (let n = 1; ; n += 1) {
    const target = `${file}.bak-${stamp(now)}${n === 1 ? '' : `-${n}`}`;
    try {
      await fsp.writeFile(target, text, { flag: 'wx', mode: 0o600 });
      return target;
    } catch (err) {
      if (!isErrno(err, 'EEXIST') || n >= 100) throw err;
    }
  }
}

/** Writes the new settings through a rename, to the real file behind a symlink, keeping its mode. */
async function writeSettings(file: string, text: string, existed: boolean): Promise<void> {
  const target = existed ? await fsp.realpath(file) : file;
  const mode = existed ? (await fsp.stat(target)).mode & 0o777 : 0o600;
  await writeFileAtomic(target, text);
  await fsp.chmod(target, mode);
}

async function edit(
  io: HookIo,
  file: string,
  change: (text: string) => { text: string; changed: string[] },
  verb: string,
): Promise<ExitCode> {
  const text = await readSettingsText(file);
  const { text: after, changed } = change(text ?? '');
  if (changed.length === 0) {
    io.stdout.write(
      `${file}: nothing to change (${verb === 'merged' ? 'hooks already installed' : 'no context-guardian hooks'})\n`,
    );
    return EXIT.OK;
  }
  if (text !== null) io.stdout.write(`backup: ${await backup(file, text, io.now())}\n`);
  await writeSettings(file, after, text !== null);
  io.stdout.write(`${verb} ${changed.join(', ')} in ${file}:\n${lineDiff(text ?? '', after)}\n`);
  return EXIT.OK;
}

/** `install`: prints the hooks and the MCP command; with --apply, backs up and merges (seed "Claude Code"). */
export async function installCommand(io: HookIo, flags: InstallFlags): Promise<ExitCode> {
  const file = settingsPath(flags, io);
  const command = flags.command ?? toolCommand('context-guardian-claude-code', io.env);
  const mcp = mcpAddCommand(toolCommand('context-guardian-mcp', io.env));
  if (!flags.apply) {
    io.stdout.write(`Hooks for ${file} (merged in by --apply, with a backup):\n`);
    io.stdout.write(`${JSON.stringify(hooksSnippet(command), null, 2)}\n\n`);
    io.stdout.write(`MCP server (search the archive from inside Claude Code):\n${mcp}\n`);
    return EXIT.OK;
  }
  const code = await edit(
    io,
    file,
    (text) => {
      const r = mergeHooks(text, file, command);
      return { text: r.text, changed: r.added };
    },
    'merged',
  );
  io.stdout.write(`\nMCP server, if not added yet:\n${mcp}\n`);
  return code;
}

/** `uninstall`: the exact reverse of install, with the same backup; without --apply shows what it would do. */
export async function uninstallCommand(
  io: HookIo,
  flags: SettingsFlags & { apply?: boolean },
): Promise<ExitCode> {
  const file = settingsPath(flags, io);
  const change = (text: string): { text: string; changed: string[] } => {
    const r = removeHooks(text, file);
    return { text: r.text, changed: r.removed };
  };
  const code = flags.apply
    ? await edit(io, file, change, 'removed')
    : await (async () => {
        const text = (await readSettingsText(file)) ?? '';
        const { text: after, changed } = change(text);
        if (changed.length === 0) io.stdout.write(`${file}: no context-guardian hooks\n`);
        else
          io.stdout.write(
            `--apply would remove ${changed.join(', ')} from ${file}:\n${lineDiff(text, after)}\n`,
          );
        return EXIT.OK;
      })();
  io.stdout.write(`\nMCP server, if it was added:\n${mcpRemoveCommand()}\n`);
  return code;
}
