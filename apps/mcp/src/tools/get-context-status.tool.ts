import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

import { ledgerDir } from '../cc-ledger';
import { contextStatus, type ContextStatus } from '../transcript-fullness';
import { LOCAL_READ, textResult, type ToolContext } from '../tool-kit';
import { RECALL_TOOLS } from '@guardian/compaction';

const ContextOutput = z.object({
  state: z
    .enum(['ok', 'high', 'critical', 'unknown'])
    .describe('ok, high (70%+), critical (90%+) or unknown.'),
  used_tokens: z.number().int().nullable().describe('Estimated tokens since the last compaction.'),
  window: z.number().int().nullable().describe('Window.'),
  window_source: z
    .enum(['CG_CC_WINDOW', 'model', 'default'])
    .nullable()
    .describe('Where the window came from.'),
  pct: z.number().nullable().describe('Percent of the window used.'),
  model: z.string().nullable().describe('Model named in the transcript.'),
  transcript: z.string().nullable().describe('Transcript file name.'),
  bytes_counted: z.number().int().nullable().describe('Bytes after the last compaction.'),
  boundary: z
    .enum(['precompact', 'compact_boundary', 'none'])
    .nullable()
    .describe(
      "Where counting starts: the hook's last PreCompact, Claude Code's boundary line, or the start.",
    ),
  compacted: z.boolean().describe('Whether a compaction boundary was found.'),
  reason: z.string().nullable().describe('Why the state is unknown.'),
});

/** get_context_status: Claude Code's window fullness estimated from its transcript; never errors (seed). */
export function registerGetContextStatus(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    RECALL_TOOLS.getContextStatus,
    {
      title: 'Context fullness',
      description:
        'Claude Code context window fullness. Use before big reads, no network. ' +
        'Returns state, used_tokens, window, pct (ok, high 70%+, critical 90%+, unknown with reason).',
      inputSchema: {
        transcript_path: z
          .string()
          .min(1)
          .optional()
          .describe('Claude Code transcript (.jsonl). Omit for the newest the hook captured.'),
      },
      outputSchema: ContextOutput,
      annotations: LOCAL_READ,
    },
    async ({ transcript_path }) => {
      const status = await contextStatus({
        transcriptPath: transcript_path,
        ledgerDir: ledgerDir(ctx.config.paths.dataDir),
        projectsDir: ctx.config.claudeProjectsDir,
        charsPerToken: ctx.config.charsPerToken,
        ccWindow: ctx.config.ccWindow,
      });
      return textResult(describe(status), { ...status });
    },
  );
}

function describe(s: ContextStatus): string {
  if (s.state === 'unknown') return `unknown: ${s.reason ?? 'no transcript'}`;
  const since = s.compacted ? 'since the last compaction' : 'in the whole transcript';
  return `${s.state}: ~${s.used_tokens} of ${s.window} tokens (${s.pct}%) ${since}; window from ${s.window_source}`;
}
