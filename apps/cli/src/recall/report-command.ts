import { spendUsd, type ReceiptsSummary, type SavingsSummary, type TokenPrices } from '@guardian/archive';

import { formatCount, printJson } from '../common/cli-io';
import { EXIT, type ExitCode } from '../common/exit-codes';
import type { RecallContext } from './recall-context';

function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

function sealLine(r: ReceiptsSummary): string {
  if (r.runs === 0) return 'no runs yet';
  if (!r.sealed) return 'not sealed (run --seal-existing)';
  return r.runs_broken === 0 ? 'sealed, all runs verify' : `sealed, ${r.runs_broken} run(s) fail --verify`;
}

/** The seed's five-line share block. */
export function shareBlock(r: ReceiptsSummary): string {
  return [
    `Context Guardian receipts (last ${r.window})`,
    `- ${formatCount(r.compactions)} compactions, ~${formatCount(r.tokens_kept_out)} tokens kept out of the window`,
    `- ${formatCount(r.spans_archived)} spans archived (${megabytes(r.archive_bytes)}), ${sealLine(r)}`,
    `- ${formatCount(r.recall_calls)} recall calls opened ${formatCount(r.spans_opened)} spans; ${r.read_back_pct}% of the archive was read back`,
    '- local only: no telemetry, nothing left this machine',
  ].join('\n');
}

function receiptsTable(r: ReceiptsSummary): string {
  return [
    `Context Guardian receipts (last ${r.window})`,
    `  compactions       ${formatCount(r.compactions)}`,
    `  kept out          ~${formatCount(r.tokens_kept_out)} tokens`,
    `  spans archived    ${formatCount(r.spans_archived)} (${megabytes(r.archive_bytes)})`,
    `  seal              ${sealLine(r)}`,
    `  recall calls      ${formatCount(r.recall_calls)} (${formatCount(r.recall_tool_calls)} by the model through the proxy)`,
    `  spans opened      ${formatCount(r.spans_opened)}`,
    `  read back         ${formatCount(r.chars_returned)} chars (${r.read_back_pct}% of the archive)`,
  ].join('\n');
}

/** `--receipts --since AGE [--share]`. */
export async function receiptsCommand(ctx: RecallContext): Promise<ExitCode> {
  const summary = await ctx.archive.receipts({ since: ctx.flags.since });
  if (ctx.flags.json) printJson(ctx.io, summary);
  else ctx.io.stdout.write(`${ctx.flags.share ? shareBlock(summary) : receiptsTable(summary)}\n`);
  return EXIT.OK;
}

/** The seed's savings block, and the backend's own usage (the usage log) under it. */
export function savingsBlock(
  s: SavingsSummary,
  prices: TokenPrices = { inputPer1M: 0, outputPer1M: 0 },
): string {
  const costPer1M = prices.inputPer1M;
  const lines = [
    `Context Guardian savings (last ${s.window})`,
    `  compactions   ${formatCount(s.compactions)}`,
    `  requests      ${formatCount(s.tokens_before)} -> ${formatCount(s.tokens_after)} tokens (${s.pct_smaller}% smaller)`,
    `  kept out      ${formatCount(s.tokens_kept_out)} tokens`,
    `  oversized     ${formatCount(s.oversized_spills)} pasted message(s) cut to head + tail`,
    `  summaries     ${formatCount(s.summaries_reused)} reused (no summariser call)`,
    `  recall        ${formatCount(s.recall_calls)} call(s), ${formatCount(s.chars_returned)} chars returned`,
    `  answered      ${formatCount(s.answers)} request(s): ${formatCount(s.tokens_in)} tokens in, ${formatCount(s.tokens_out)} out` +
      (s.answers_without_usage > 0 ? ` (${formatCount(s.answers_without_usage)} reported no usage)` : ''),
    `  summariser    ${formatCount(s.summariser_tokens_in)} tokens in, ${formatCount(s.summariser_tokens_out)} out`,
  ];
  if (costPer1M > 0) {
    lines.push(
      `  cost          $${costSaved(s, costPer1M).toFixed(2)} of input kept out (at $${costPer1M} per 1M tokens)`,
    );
  }
  if (prices.inputPer1M > 0 || prices.outputPer1M > 0) {
    lines.push(
      `  spend         $${spendUsd(s, prices).toFixed(2)} (at $${prices.inputPer1M} in, $${prices.outputPer1M} out per 1M tokens)`,
    );
  }
  return lines.join('\n');
}

/** Money the kept-out tokens would have cost (GUARDIAN_COST_PER_1M_INPUT_USD). */
function costSaved(s: SavingsSummary, costPer1M: number): number {
  return (s.tokens_kept_out / 1_000_000) * costPer1M;
}

/** `--savings --since AGE [--json]`. */
export async function savingsCommand(ctx: RecallContext): Promise<ExitCode> {
  const summary = await ctx.archive.savings({ since: ctx.flags.since });
  const prices = {
    inputPer1M: ctx.config.costPer1MInputUsd ?? 0,
    outputPer1M: ctx.config.costPer1MOutputUsd ?? 0,
  };
  const price = prices.inputPer1M;
  if (ctx.flags.json)
    printJson(ctx.io, {
      ...summary,
      ...(price > 0 ? { cost_saved_usd: Number(costSaved(summary, price).toFixed(4)) } : {}),
      ...(price > 0 || prices.outputPer1M > 0 ? { cost_usd: spendUsd(summary, prices) } : {}),
    });
  else ctx.io.stdout.write(`${savingsBlock(summary, prices)}\n`);
  return EXIT.OK;
}
