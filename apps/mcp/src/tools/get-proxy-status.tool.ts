import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

import { fetchProxyStats } from '../proxy-client';
import { guarded, textResult, type ToolContext } from '../tool-kit';
import { RECALL_TOOLS } from '@guardian/compaction';

const TIMEOUT_MS = 3000;

// The fields the seed documents; the sidecar sends more (ARCHITECTURE.md#http-surface), so the object stays open.
const StatsOutput = z.looseObject({
  version: z.string().optional().describe('Version.'),
  upstream: z.string().optional().describe('URL.'),
  replica: z.string().optional().describe('Replica.'),
  num_ctx: z.number().int().nullable().optional().describe('Window.'),
  window_source: z.string().optional().describe('Window source.'),
  effective_input_budget: z.number().int().nullable().optional().describe('Budget.'),
  compactions_performed: z.number().int().optional().describe('Compactions.'),
  dry_run: z.boolean().optional().describe('Dry.'),
});

/** get_proxy_status: the running sidecar's /guardian/stats, as text and structured output (seed). */
export function registerGetProxyStatus(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    RECALL_TOOLS.getProxyStatus,
    {
      title: 'Proxy status',
      description:
        'Proxy up and compacting? Use list_spans, search_spans or read_span for archived text. ' +
        'One GET to /guardian/stats, 3 s. Returns stats.',
      outputSchema: StatsOutput,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    },
    () =>
      guarded(ctx, RECALL_TOOLS.getProxyStatus, async () => {
        const stats = await fetchProxyStats({
          baseUrl: ctx.config.proxyUrl,
          token: ctx.config.token,
          timeoutMs: TIMEOUT_MS,
        });
        return textResult(JSON.stringify(stats, null, 2), stats);
      }),
  );
}
