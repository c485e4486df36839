import { appendFileSync } from 'node:fs';

import { Command } from 'commander';
import { z } from 'zod';

import { replicaTag, resolveGuardianPaths } from '@guardian/archive';
import { GuardianClient, sidecarTarget } from '@guardian/client';

import { loadCliConfig, processIo, type CliConfig } from '../common/cli-config';
import { handleCliError } from '../common/cli-error';
import type { ExitCode } from '../common/exit-codes';
import { captureCommand } from './capture-command';
import { ccPaths, type HookIo } from './hook-io';
import { HookLog } from './hook-log';
import { InstallFlagsSchema, SettingsFlagsSchema, installCommand, uninstallCommand } from './install-command';
import { resumeCommand } from './resume-command';
import { statusCommand } from './status-command';

const NAME = 'context-guardian-claude-code';
/** Seed: the capture "stops itself after 20 s"; spans stop a little earlier so the hard stop never tears one. */
const HARD_STOP_MS = 20_000;
const SOFT_STOP_MS = 17_000;
/** One post to the sidecar (a 2 MB batch) within this; the soft stop still ends the capture between posts. */
const POST_TIMEOUT_MS = 10_000;

/** Team mode (GUARDIAN_URL with GUARDIAN_TOKEN): the capture posts to the sidecar (libs/client sidecarTarget). */
function sidecarFor(io: HookIo): GuardianClient | undefined {
  const target = sidecarTarget(io.env);
  return target.remote
    ? new GuardianClient({ url: target.url, token: target.token, timeoutMs: POST_TIMEOUT_MS })
    : undefined;
}

function readProcessStdin(): Promise<string> {
  if (process.stdin.isTTY === true) return Promise.resolve('');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    process.stdin.on('data', (c: Buffer) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

function processHookIo(): HookIo {
  return { ...processIo(), readStdin: readProcessStdin, cwd: () => process.cwd() };
}

// The variables that only name folders: a hook falls back to these alone when a numeric GUARDIAN_* is bad.
const PATH_VARS = [
  'GUARDIAN_DATA_DIR',
  'GUARDIAN_SPAN_DIR',
  'GUARDIAN_LOG_DIR',
  'GUARDIAN_LOG_PATH',
  'GUARDIAN_RECEIPTS',
  'GUARDIAN_SEAL_ANCHOR_DIR',
  'GUARDIAN_SEAL_ANCHOR_PATH',
  'XDG_DATA_HOME',
];

/** Config for a hook: a bad GUARDIAN_* number must not fail the hook, so the defaults stand in (logged). */
async function hookConfig(io: HookIo): Promise<{ config: CliConfig; log: HookLog }> {
  try {
    const config = loadCliConfig(io);
    return { config, log: new HookLog(ccPaths(config.dataDir).logFile, io.now, io.stderr) };
  } catch (err) {
    const env = Object.fromEntries(PATH_VARS.map((name) => [name, io.env[name]]));
    const config = loadCliConfig({ ...io, env });
    const log = new HookLog(ccPaths(config.dataDir).logFile, io.now, io.stderr);
    await log.failure('config', err);
    return { config, log };
  }
}

/** A hook that outlives its limit exits 0 rather than be killed by Claude Code's own timeout. */
function armHardStop(io: HookIo): void {
  setTimeout(() => {
    try {
      const file = ccPaths(resolveGuardianPaths(io.env, io.home).dataDir).logFile;
      appendFileSync(
        file,
        `${JSON.stringify({ ts: new Date().toISOString(), command: 'hook', code: 'CC_HOOK_TIMEOUT' })}\n`,
        { mode: 0o600 },
      );
    } finally {
      process.exit(0);
    }
  }, HARD_STOP_MS).unref();
}

const StatusFlagsSchema = SettingsFlagsSchema.extend({ json: z.boolean().optional() });

function program(io: HookIo, done: (code: ExitCode) => void, isProcess: boolean): Command {
  const root = new Command()
    .name(NAME)
    .description('Archive Claude Code sessions into the Context Guardian archive through its hooks.')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
  const hook = async (run: (c: { config: CliConfig; log: HookLog }) => Promise<ExitCode>): Promise<void> => {
    if (isProcess) armHardStop(io);
    done(await run(await hookConfig(io)));
  };
  root
    .command('capture')
    .description(
      'hook entry point (PreCompact, SessionEnd): archive the new transcript lines; always exits 0',
    )
    .action(() =>
      hook((c) =>
        captureCommand({
          io,
          ...c,
          replica: replicaTag(io.now()),
          deadline: AbortSignal.timeout(SOFT_STOP_MS),
          sidecar: () => sidecarFor(io),
        }),
      ),
    );
  root
    .command('resume')
    .description(
      'SessionStart hook (matcher compact): print the saved facts as additionalContext; always exits 0',
    )
    .action(() => hook((c) => resumeCommand({ io, ...c })));
  const settingsOptions = (cmd: Command): Command =>
    cmd
      .option('--scope <scope>', 'user (~/.claude or $CLAUDE_CONFIG_DIR), project or local', 'user')
      .option('--settings <path>', 'edit this settings file instead');
  settingsOptions(
    root.command('install').description('print the hooks and the MCP command; --apply merges the hooks'),
  )
    .option('--apply', 'back up the settings file, merge the hooks, print the diff')
    .option(
      '--command <cmd>',
      'how Claude Code runs this tool (default: this install, by absolute path unless on PATH)',
    )
    .action(async (opts: unknown) => done(await installCommand(io, InstallFlagsSchema.parse(opts))));
  settingsOptions(
    root.command('uninstall').description('remove the hooks again; --apply edits, with the same backup'),
  )
    .option('--apply', 'back up the settings file, remove the hooks, print the diff')
    .action(async (opts: unknown) => done(await uninstallCommand(io, InstallFlagsSchema.parse(opts))));
  settingsOptions(
    root.command('status').description('hooks installed, sessions captured, last capture, seal status'),
  )
    .option('--json', 'print JSON')
    .action(async (opts: unknown) =>
      done(await statusCommand({ io, config: loadCliConfig(io), flags: StatusFlagsSchema.parse(opts) })),
    );
  return root;
}

/**
 * `context-guardian-claude-code`: capture | resume | install | uninstall | status. The two hook commands
 * always return 0 (their problems go to `claude-code/hooks.log`); the others return 0, 1 (a broken run in
 * status) or 2 (usage, unreadable settings file). Never throws.
 */
export async function main(argv: string[], io?: HookIo): Promise<number> {
  const used = io ?? processHookIo();
  let code: ExitCode = 0;
  try {
    await program(used, (c) => (code = c), io === undefined).parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    return handleCliError(err, used, NAME);
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
