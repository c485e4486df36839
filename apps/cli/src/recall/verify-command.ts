import { LocalArchive, sealAll, verifyLogs, type LogVerdict, type RunVerdict } from '@guardian/archive';

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
  return `log ${v.log} OK (${v.size} entries${pruned}, ${since})`;
}

/**
 * `--verify [--all | --run R]`: OK per run or its first break, then (on the span folder) each writer's log against
 * its pinned key, its last verified checkpoint and the span files; exit 0 only when every run and log is OK.
 */
export async function verifyCommand(ctx: RecallContext): Promise<ExitCode> {
  const result = await sealAll(ctx.archive, { run: ctx.flags.run });
  // Through a sidecar the logs are its served tiles, which an auditor checks with their own tools (ARCHIVE_FORMAT.md).
  const logs =
    ctx.archive instanceof LocalArchive
      ? await verifyLogs({
          spanDir: ctx.config.spanDir,
          verifiedDir: ctx.config.verifiedDir,
          run: ctx.flags.run,
          now: ctx.io.now,
          onPinError: (cause) =>
            ctx.io.stderr.write(
              `context-guardian-recall: warning: the verified checkpoint was not kept in ${ctx.config.verifiedDir} (${cause instanceof Error ? cause.message : String(cause)})\n`,
            ),
        })
      : null;
  const ok = result.ok && logs?.ok !== false;
  if (ctx.flags.json) printJson(ctx.io, { ok, runs: result.runs, logs: logs?.logs ?? null });
  else {
    for (const verdict of result.runs) ctx.io.stdout.write(`${verdictLine(verdict)}\n`);
    for (const verdict of logs?.logs ?? []) ctx.io.stdout.write(`${logLine(verdict)}\n`);
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

/** `--heads`: each run's chain head. */
export async function headsCommand(ctx: RecallContext): Promise<ExitCode> {
  const heads = await ctx.archive.heads();
  if (ctx.flags.json) printJson(ctx.io, heads);
  else for (const h of heads) ctx.io.stdout.write(`${h.run} seq ${h.seq} ${h.head}\n`);
  return EXIT.OK;
}
