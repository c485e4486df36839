import { ArchiveError, verifyRun, type RunVerdict } from '@guardian/archive';

import type { CliConfig } from '../common/cli-config';
import { printJson } from '../common/cli-io';
import { EXIT, type ExitCode } from '../common/exit-codes';
import { LedgerStore } from './capture-ledger';
import { errorMessage } from './fs-errors';
import { ccPaths, type HookIo } from './hook-io';
import { readSettingsText, settingsPath, type SettingsFlags } from './install-command';
import { whyNotRunnable } from './hook-command';
import { HOOK_SPECS, installedHooks, ourCommands, parseSettings } from './settings-hooks';

/** What `status` reports (also its `--json`). */
export interface CcStatus {
  settings: string;
  hooks: 'installed' | 'partly installed' | 'not installed' | 'settings unreadable';
  installed: string[];
  /** Why the installed hooks would not run (a moved clone, an unbuilt one, a name not on PATH); null when they would. */
  cannot_run: string | null;
  sessions: number;
  last_capture_at: string | null;
  last_event: string | null;
  runs: { run: string; status: RunVerdict['status'] | 'missing'; detail: string | null }[];
}

async function hookState(
  io: HookIo,
  flags: SettingsFlags,
): Promise<Pick<CcStatus, 'settings' | 'hooks' | 'installed' | 'cannot_run'>> {
  const file = settingsPath(flags, io);
  const text = await readSettingsText(file);
  if (text === null) return { settings: file, hooks: 'not installed', installed: [], cannot_run: null };
  let installed: string[];
  let cannotRun: string | undefined;
  try {
    const settings = parseSettings(text, file);
    installed = installedHooks(settings);
    cannotRun = ourCommands(settings)
      .map((c) => whyNotRunnable(c, io.env))
      .find((why) => why !== undefined);
  } catch (err) {
    // Status only reports; install --apply is where an unreadable file is refused.
    io.stderr.write(`context-guardian-claude-code: ${errorMessage(err)}\n`);
    return { settings: file, hooks: 'settings unreadable', installed: [], cannot_run: null };
  }
  const hooks =
    installed.length === HOOK_SPECS.length
      ? 'installed'
      : installed.length > 0
        ? 'partly installed'
        : 'not installed';
  return { settings: file, hooks, installed, cannot_run: cannotRun ?? null };
}

async function runVerdicts(config: CliConfig, runs: string[]): Promise<CcStatus['runs']> {
  const out: CcStatus['runs'] = [];
  for (const run of runs) {
    try {
      const v = await verifyRun({ spanDir: config.spanDir, anchorDir: config.anchorDir, run });
      out.push({
        run,
        status: v.status,
        detail: v.break === null ? null : `${v.break.kind}: ${v.break.detail}`,
      });
    } catch (err) {
      // A run removed by --prune is history, not a fault.
      if (!ArchiveError.is(err, 'ARCHIVE_NOT_FOUND')) throw err;
      out.push({ run, status: 'missing', detail: 'removed (retention prune)' });
    }
  }
  return out;
}

/** `status`: hooks installed, sessions captured, last capture, seal status of the capture runs. Exit 1 on a break. */
export async function statusCommand(ctx: {
  io: HookIo;
  config: CliConfig;
  flags: SettingsFlags & { json?: boolean };
}): Promise<ExitCode> {
  const { io, config, flags } = ctx;
  const ledgers = await new LedgerStore(ccPaths(config.dataDir).sessionsDir).all();
  const latest = ledgers.reduce<(typeof ledgers)[number] | null>(
    (a, b) => (a === null || b.last_capture_at > a.last_capture_at ? b : a),
    null,
  );
  const status: CcStatus = {
    ...(await hookState(io, flags)),
    sessions: ledgers.length,
    last_capture_at: latest?.last_capture_at ?? null,
    last_event: latest?.last_event ?? null,
    runs: await runVerdicts(config, [...new Set(ledgers.flatMap((l) => l.runs))].sort()),
  };
  const broken = status.runs.filter((r) => r.status === 'break');
  if (flags.json === true) printJson(io, status);
  else {
    const sealed = status.runs.filter((r) => r.status === 'ok' || r.status === 'pruned-ok').length;
    io.stdout.write(
      [
        `hooks: ${status.hooks} (${status.settings})${status.installed.length > 0 ? `: ${status.installed.join(', ')}` : ''}`,
        ...(status.cannot_run === null ? [] : [`  cannot run: ${status.cannot_run}`]),
        `sessions captured: ${status.sessions}`,
        `last capture: ${status.last_capture_at === null ? 'never' : `${status.last_capture_at} (${status.last_event ?? 'unknown event'})`}`,
        `capture runs: ${status.runs.length}, sealed OK: ${sealed}${broken.length > 0 ? `, BROKEN: ${broken.length}` : ''}`,
        ...broken.map((r) => `  ${r.run}: ${r.detail ?? ''} (context-guardian-recall --repair ${r.run})`),
      ].join('\n') + '\n',
    );
  }
  return broken.length > 0 || status.cannot_run !== null ? EXIT.NONE : EXIT.OK;
}
