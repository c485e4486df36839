import {
  LocalArchive,
  pinnedLogsGone,
  sealAll,
  verifyLogs,
  verifyOneLog,
  type LogVerdict,
  type PinOptions,
  type RunVerdict,
} from '@guardian/archive';
import { RemoteArchive } from '@guardian/client';

import { printJson } from '../common/cli-io';
import { EXIT, type ExitCode } from '../common/exit-codes';
import type { RecallContext } from './recall-context';

function verdictLine(v: RunVerdict): string {
  if (v.break !== null) {
    const at = v.break.seq !== null ? ` at seq ${v.break.seq}` : '';
    return `${v.run} BREAK ${v.break.kind}${at}: ${v.break.detail}`;
  }
  const anchored = v.anchored ? ', anchored' : '';
  return v.status === 'pruned-ok'
    ? `${v.run} OK (${v.pruned} pruned as expected${anchored})`
    : `${v.run} OK${anchored ? ' (anchored)' : ''}`;
}

function logLine(v: LogVerdict): string {
  if (v.break !== null) {
    const at = v.break.entry !== null ? ` at entry ${v.break.entry}` : '';
    return `log ${v.log} BREAK ${v.break.kind}${at}: ${v.break.detail}`;
  }
  const since =
    v.since === null ? 'first verify: key pinned' : `consistent with the ${v.since} verified before`;
  const pruned = v.pruned > 0 ? `, ${v.pruned} pruned as expected` : '';
  // Lines whose entry its writer may still append: a live writer's next checkpoint, or one on another host.
  const waiting =
    v.waiting > 0
      ? `, ${v.waiting} span(s) wait for ${v.writer === 'live' ? "its live writer's next checkpoint" : 'a writer this machine cannot see (another host)'}`
      : '';
  // Through a sidecar the span files are not served as bytes: its seal (the run lines) checks them there.
  const depth =
    v.checked === 'spans'
      ? ''
      : v.checked === 'entries'
        ? "; span files: the sidecar's seal"
        : "; tree from its hash tiles, span files: the sidecar's seal";
  return `log ${v.log} OK (${v.size} entries${pruned}${waiting}, ${since}${depth})`;
}

/**
 * `--verify [--all | --run R]`: OK per run or its first break, then (on the span folder) each writer's log against
 * its pinned key, its last verified checkpoint and the span files; exit 0 only when every run and log is OK.
 */
export async function verifyCommand(ctx: RecallContext): Promise<ExitCode> {
  const result = await sealAll(ctx.archive, { run: ctx.flags.run });
  const pins: PinOptions = {
    verifiedDir: ctx.config.verifiedDir,
    now: ctx.io.now,
    onPinError: (cause: unknown) =>
      ctx.io.stderr.write(
        `context-guardian-recall: warning: the verified checkpoint was not kept in ${ctx.config.verifiedDir} (${cause instanceof Error ? cause.message : String(cause)})\n`,
      ),
  };
  const logs =
    ctx.archive instanceof LocalArchive
      ? await verifyLogs({ ...pins, spanDir: ctx.config.spanDir, run: ctx.flags.run })
      : ctx.archive instanceof RemoteArchive
        ? await servedLogs(ctx.archive, pins, ctx.flags.run !== undefined)
        : null;
  const ok = result.ok && logs?.ok !== false;
  // Through a sidecar no chain is read: what names no log is the sidecar's to count.
  const withoutLog = logs?.withoutLog ?? null;
  if (ctx.flags.json)
    printJson(ctx.io, { ok, runs: result.runs, logs: logs?.logs ?? null, without_log: withoutLog });
  else {
    for (const verdict of result.runs) ctx.io.stdout.write(`${verdictLine(verdict)}\n`);
    for (const verdict of logs?.logs ?? []) ctx.io.stdout.write(`${logLine(verdict)}\n`);
    if (withoutLog !== null && withoutLog.spans > 0)
      ctx.io.stdout.write(
        `${withoutLog.spans} span(s) in ${withoutLog.runs} run(s) were written before the log existed: in no log, sealed by their chains only\n`,
      );
    const broken = result.runs.filter((r) => r.status === 'break').length;
    const brokenLogs = (logs?.logs ?? []).filter((l) => l.status === 'break').length;
    const logPart =
      logs === null ? '' : `, ${logs.logs.length} log(s)${brokenLogs > 0 ? `: ${brokenLogs} broken` : ''}`;
    ctx.io.stdout.write(
      broken === 0 && brokenLogs === 0
        ? `${result.runs.length} run(s)${logPart} checked: all OK\n`
        : `${result.runs.length} run(s) checked: ${broken} broken${logPart}\n`,
    );
  }
  return ok ? EXIT.OK : EXIT.NONE;
}

/**
 * The logs a sidecar serves, checked here from its files (issue 29 item 5 through the recall API): key against the
 * pin kept on this machine, signature, tree and tiles, consistency with the last checkpoint verified here.
 */
async function servedLogs(
  archive: RemoteArchive,
  pins: PinOptions,
  keepPin: boolean,
): Promise<{ ok: boolean; logs: LogVerdict[]; withoutLog: null }> {
  const logs: LogVerdict[] = [];
  const listing = (await archive.logs()).logs;
  for (const listed of listing) {
    const checked = listed.entries_served ? 'entries' : 'hashes';
    const verdict = await verifyOneLog(archive.logSource(listed.name), { ...pins, checked, keepPin });
    if (verdict !== null) logs.push(verdict);
  }
  // A log pinned here that the sidecar no longer lists (deleted with its runs) is log-missing, as on the volume.
  if (!keepPin && pins.verifiedDir !== null) logs.push(...(await pinnedLogsGone(pins.verifiedDir, listing)));
  return { ok: logs.every((l) => l.status !== 'break'), logs, withoutLog: null };
}

/** `--heads`: each run's chain head. */
export async function headsCommand(ctx: RecallContext): Promise<ExitCode> {
  const heads = await ctx.archive.heads();
  if (ctx.flags.json) printJson(ctx.io, heads);
  else for (const h of heads) ctx.io.stdout.write(`${h.run} seq ${h.seq} ${h.head}\n`);
  return EXIT.OK;
}
