import { Receipts, searchArchive } from '@guardian/archive';

import { printJson } from '../common/cli-io';
import { EXIT, type ExitCode } from '../common/exit-codes';
import type { RecallContext } from './recall-context';

/** `context-guardian-recall "<term>"`: best match first; exit 0 with hits, 1 without. */
export async function searchCommand(ctx: RecallContext, term: string): Promise<ExitCode> {
  const { hits, total } = await searchArchive({
    spanDir: ctx.config.spanDir,
    term,
    run: ctx.flags.run,
    session: ctx.flags.session,
    max: ctx.flags.max,
  });
  if (ctx.flags.json) printJson(ctx.io, { total, hits });
  else if (hits.length === 0) ctx.io.stdout.write('no hits\n');
  else {
    for (const hit of hits) {
      ctx.io.stdout.write(`${hit.ref} msg ${hit.message_index} [${hit.role}]: ${hit.snippet}\n`);
    }
    if (total > hits.length) ctx.io.stdout.write(`(${total - hits.length} more; --max to see more)\n`);
  }
  const chars = hits.reduce((sum, h) => sum + h.snippet.length, 0);
  await recordReceipt(ctx, { kind: 'recall_call', hits: hits.length, chars_returned: chars });
  return hits.length > 0 ? EXIT.OK : EXIT.NONE;
}

async function recordReceipt(
  ctx: RecallContext,
  counts: { kind: 'recall_call'; hits: number; chars_returned: number },
): Promise<void> {
  try {
    await new Receipts({ receiptsDir: ctx.config.receiptsDir, replica: ctx.replica, now: ctx.io.now }).record(
      counts,
    );
  } catch (err) {
    // Receipts never fail a recall (seed: fail open for every receipt write); say so once on stderr.
    ctx.io.stderr.write(
      `context-guardian-recall: warning: receipt not written (${err instanceof Error ? err.message : String(err)})\n`,
    );
  }
}
