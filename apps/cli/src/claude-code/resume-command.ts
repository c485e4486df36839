import type { CliConfig } from '../common/cli-config';
import { LedgerStore, sessionRuns } from './capture-ledger';
import { parseHookInput, sessionHashOf } from './hook-input';
import { ccPaths, type HookIo } from './hook-io';
import type { HookLog } from './hook-log';
import { renderResume } from './resume-block';
import { archivedSessionLines, sessionFacts } from './session-facts';
import { SnapshotStore } from './snapshot-store';

export interface ResumeContext {
  io: HookIo;
  config: CliConfig;
  log: HookLog;
}

/** The hook output Claude Code reads from a SessionStart command (hooks reference: additionalContext). */
export interface SessionStartOutput {
  hookSpecificOutput: { hookEventName: 'SessionStart'; additionalContext: string };
}

/**
 * `resume`: the SessionStart hook, matcher `compact`. Prints the saved snapshot and the session's archived
 * facts as additionalContext, then deletes the snapshot. Prints nothing when there is nothing to say or when
 * anything fails (logged); always returns 0 so a session never fails to start because of guardian (seed).
 */
export async function resumeCommand(ctx: ResumeContext): Promise<0> {
  let session: string | undefined;
  try {
    const input = parseHookInput(await ctx.io.readStdin());
    const sessionHash = sessionHashOf(input);
    session = sessionHash.slice(0, 12);
    // Claude Code replays saved context on resume and runs SessionStart again then (seed): compact only.
    if (input.source !== undefined && input.source !== 'compact') return 0;
    const paths = ccPaths(ctx.config.dataDir);
    const snapshots = new SnapshotStore(paths.snapshotsDir, ctx.io.now);
    const snapshot = await snapshots.read(sessionHash);
    const ledger = await new LedgerStore(paths.sessionsDir).read(sessionHash);
    const runs = await sessionRuns(ctx.config.spanDir, sessionHash, ledger?.runs ?? []);
    const lines = runs.length === 0 ? [] : await archivedSessionLines(ctx.config.spanDir, runs);
    const facts = lines.length === 0 ? null : sessionFacts(lines);
    if (snapshot === null && facts === null) return 0;
    const output: SessionStartOutput = {
      hookSpecificOutput: {
        hookEventName: 'SessionStart',
        additionalContext: renderResume({ sessionHash, snapshot, facts }),
      },
    };
    ctx.io.stdout.write(`${JSON.stringify(output)}\n`);
    if (snapshot !== null) await snapshots.delete(sessionHash);
  } catch (err) {
    await ctx.log.failure('resume', err, session === undefined ? {} : { session });
  }
  return 0;
}
