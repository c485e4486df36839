import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

import { GuardianClientError } from '@guardian/client';
import { RECALL_TOOLS } from '@guardian/compaction';

import { guarded, textResult, type ToolContext } from '../tool-kit';

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
        const stats = await ctx.client.stats().catch((err: unknown) => {
          throw explained(err, ctx.config.proxyUrl);
        });
        return textResult(JSON.stringify(stats, null, 2), { ...stats });
      }),
  );
}

/** The client's error in words a model can act on: where no proxy listens, or that a token is missing. */
function explained(err: unknown, url: string): unknown {
  if (!(err instanceof GuardianClientError)) return err;
  if (err.code === 'SIDECAR_UNREACHABLE')
    return new GuardianClientError(
      err.code,
      `no proxy at ${url} (${err.message}; start it with context-guardian, or set GUARDIAN_URL / GUARDIAN_PORT)`,
    );
  if (err.status === 401 || err.status === 403)
    return new GuardianClientError(err.code, `proxy answered ${err.status}: set GUARDIAN_TOKEN`, err.status);
  return err;
}
