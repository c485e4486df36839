import { pruneRuns, reindex, repairRun, sealExisting, verifyRun } from '@guardian/archive';

import { printJson, progress } from '../common/cli-io';
import { EXIT, type ExitCode } from '../common/exit-codes';
import type { RecallContext } from './recall-context';

/** `--seal-existing`: seals runs that have no chain yet, every line marked backfilled. */
export async function sealExistingCommand(ctx: RecallContext): Promise<ExitCode> {
  const result = await sealExisting({
    spanDir: ctx.config.spanDir,
    anchorDir: ctx.config.anchorDir,
    now: ctx.io.now,
    onProgress: progress(ctx.io, 'sealing runs'),
  });
  if (ctx.flags.json) printJson(ctx.io, result);
  else if (result.runs.length === 0) ctx.io.stdout.write('nothing to seal: every run already has a chain\n');
  else for (const r of result.runs) ctx.io.stdout.write(`sealed ${r.run}: ${r.lines} line(s), backfilled\n`);
  return EXIT.OK;
}

/** `--prune`: removes whole runs older than GUARDIAN_RETENTION_DAYS (0 keeps everything). */
export async function pruneCommand(ctx: RecallContext): Promise<ExitCode> {
  const days = ctx.config.retentionDays;
  const result = await pruneRuns({ spanDir: ctx.config.spanDir, retentionDays: days, now: ctx.io.now });
  if (ctx.flags.json) printJson(ctx.io, { retention_days: days, ...result });
  else if (days === 0) ctx.io.stdout.write('GUARDIAN_RETENTION_DAYS is 0: every run is kept\n');
  else {
    for (const run of result.removed) ctx.io.stdout.write(`removed ${run}\n`);
    ctx.io.stdout.write(`${result.removed.length} run(s) older than ${days} day(s) removed\n`);
  }
  return EXIT.OK;
}

/** `--repair <run>`: closes a torn tail, then verifies the run; exit 0 when it verifies. */
export async function repairCommand(ctx: RecallContext, run: string): Promise<ExitCode> {
  const result = await repairRun({
    spanDir: ctx.config.spanDir,
    anchorDir: ctx.config.anchorDir,
    run,
    now: ctx.io.now,
  });
  const verdict = await verifyRun({ spanDir: ctx.config.spanDir, anchorDir: ctx.config.anchorDir, run });
  if (ctx.flags.json) printJson(ctx.io, { ...result, verdict });
  else {
    if (result.actions.length === 0) ctx.io.stdout.write(`${run}: nothing to repair\n`);
    for (const a of result.actions)
      ctx.io.stdout.write(`${run}: ${a.action} ${a.file}${a.to !== undefined ? ` -> ${a.to}` : ''}\n`);
    ctx.io.stdout.write(
      verdict.break === null
        ? `${run} OK\n`
        : `${run} BREAK ${verdict.break.kind}: ${verdict.break.detail}\n`,
    );
  }
  return verdict.break === null ? EXIT.OK : EXIT.NONE;
}

/** `--reindex`: rebuilds every run's digest index from its spans. */
export async function reindexCommand(ctx: RecallContext): Promise<ExitCode> {
  const result = await reindex({
    spanDir: ctx.config.spanDir,
    run: ctx.flags.run,
    onProgress: progress(ctx.io, 'reindexing runs'),
  });
  if (ctx.flags.json) printJson(ctx.io, result);
  else ctx.io.stdout.write(`reindexed ${result.spans} span(s) in ${result.runs} run(s)\n`);
  return EXIT.OK;
}
