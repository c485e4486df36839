import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

import { assertRunId, sealAll, type RunVerdict } from '@guardian/archive';

import { LOCAL_READ, guarded, runIdSchema, textResult, unlessNoArchive, type ToolContext } from '../tool-kit';
import { RECALL_TOOLS } from '@guardian/compaction';

/** get_seal_status: the --verify check, one line per run (seed tool reference). */
export function registerGetSealStatus(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    RECALL_TOOLS.getSealStatus,
    {
      title: 'Verify seals',
      description:
        'Verify archive hash chains. Use list_spans for run ids. ' +
        'Returns <run> OK or <run> BREAK <kind> per run.',
      inputSchema: {
        run: runIdSchema('Run, e.g. 20261015-120000. Omit for every run.').optional(),
      },
      annotations: LOCAL_READ,
    },
    ({ run }) =>
      guarded(ctx, RECALL_TOOLS.getSealStatus, () =>
        unlessNoArchive(async () => {
          const { ok, runs } = await sealAll(ctx.archive, {
            run: run === undefined ? undefined : assertRunId(run),
          });
          if (runs.length === 0) return textResult('no runs');
          const broken = runs.filter((r) => r.status === 'break').length;
          const head = ok
            ? `OK: ${runs.length} run(s) verified`
            : `BREAK: ${broken} of ${runs.length} run(s)`;
          return textResult([head, ...runs.map(verdictLine)].join('\n'));
        }, run !== undefined),
      ),
  );
}

function verdictLine(v: RunVerdict): string {
  if (v.break !== null) return `${v.run} BREAK ${v.break.kind}: ${v.break.detail}`;
  const pruned = v.pruned > 0 ? ` (${v.pruned} pruned under a prune record)` : '';
  const anchored = v.anchored ? ', anchored' : '';
  return `${v.run} OK ${v.lines} chain line(s)${anchored}${pruned}`;
}
