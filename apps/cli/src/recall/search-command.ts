import { printJson } from '../common/cli-io';
import { EXIT, type ExitCode } from '../common/exit-codes';
import type { RecallContext } from './recall-context';

/**
 * `context-guardian-recall "<term>"`: best match first; exit 0 with hits, 1 without. The archive leaves the
 * counts-only receipt (the local one here, the sidecar's in team mode).
 */
export async function searchCommand(ctx: RecallContext, term: string): Promise<ExitCode> {
  const { hits, total, complete } = await ctx.archive.search({
    term,
    run: ctx.flags.run,
    session: ctx.flags.session,
    max: ctx.flags.max,
  });
  if (ctx.flags.json) printJson(ctx.io, complete ? { total, hits } : { total, hits, complete });
  else {
    if (hits.length === 0) ctx.io.stdout.write('no hits\n');
    for (const hit of hits) {
      ctx.io.stdout.write(`${hit.ref} msg ${hit.message_index} [${hit.role}]: ${hit.snippet}\n`);
    }
    if (total > hits.length) ctx.io.stdout.write(`(${total - hits.length} more; --max to see more)\n`);
    // Through the sidecar a search stops at its time limit (docs/team.md "Bounds").
    if (!complete)
      ctx.io.stdout.write('(the search stopped at its time limit: results are partial; add --run)\n');
  }
  return hits.length > 0 ? EXIT.OK : EXIT.NONE;
}
