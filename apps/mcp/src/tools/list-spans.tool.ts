import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

import { allRuns, allSpans, assertRunId } from '@guardian/archive';

import { LOCAL_READ, guarded, runIdSchema, textResult, unlessNoArchive, type ToolContext } from '../tool-kit';
import { RECALL_TOOLS } from '@guardian/compaction';

/** list_spans: runs with their span counts, or one run's span files (seed tool reference). */
export function registerListSpans(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    RECALL_TOOLS.listSpans,
    {
      title: 'List spans',
      description:
        'Browse spans. Use search_spans for known text, read_span to open one. ' +
        'Returns <run>: <n> spans, or a line per span given run.',
      inputSchema: {
        run: runIdSchema('Run, e.g. 20261015-120000. Omit to list runs.').optional(),
        max: z.number().int().min(1).max(100).default(20).describe('Max, e.g. 10. Capped at 100.'),
      },
      annotations: LOCAL_READ,
    },
    ({ run, max }) =>
      guarded(ctx, RECALL_TOOLS.listSpans, () =>
        unlessNoArchive(async () => {
          if (run === undefined) {
            const runs = await allRuns(ctx.archive);
            if (runs.length === 0) return textResult('no runs');
            const lines = runs.slice(0, max).map((r) => {
              const journal = r.journal_segments > 0 ? `, ${r.journal_segments} journal segment(s)` : '';
              return `${r.run}: ${r.spans} spans${journal}`;
            });
            return textResult(withMore(lines, runs.length - max));
          }
          const spans = await allSpans(ctx.archive, assertRunId(run));
          if (spans.length === 0) return textResult(`${run}: no spans`);
          // Newest spans first: the recent end of a run is what a model usually wants.
          const lines = [...spans]
            .reverse()
            .slice(0, max)
            .map((s) => `${s.run}/${s.file} ${s.bytes} bytes`);
          return textResult(withMore(lines, spans.length - max));
        }, run !== undefined),
      ),
  );
}

function withMore(lines: string[], more: number): string {
  return more > 0 ? `${lines.join('\n')}\n(${more} more; raise max)` : lines.join('\n');
}
