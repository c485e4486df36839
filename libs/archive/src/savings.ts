import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';

import { ArchiveError } from './archive-error';
import { runDir, spanFileName } from './archive-paths';
import { journalSegments, runFiles, scopedRunIds, spanNumbers } from './archive-reader';
import { readDailyLogs } from './jsonl';
import type { ArchiveScope } from './owners';
import { readReceiptTotals } from './receipts';
import { addUsageRow, emptyUsageTotals, UsageLogLineSchema, type UsageTotals } from './usage-log';
import { verifyArchive, verifyRun, type RunVerdict } from './verify';

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30m` | `24h` | `7d` | `2w` (a positive whole number and a unit) to milliseconds; ARCHIVE_BAD_AGE otherwise. */
export function parseAge(age: string): number {
  const match = /^([1-9]\d{0,5})([mhdw])$/.exec(age.trim());
  const unit = match?.[2] === undefined ? undefined : UNIT_MS[match[2]];
  if (match?.[1] === undefined || unit === undefined) {
    throw new ArchiveError(
      'ARCHIVE_BAD_AGE',
      `bad age "${age}": use a number and m, h, d or w (30m, 24h, 7d, 2w)`,
    );
  }
  return Number(match[1]) * unit;
}

/** The compaction log fields --savings reads; other fields are ignored. */
const SavingsLineSchema = z.looseObject({
  ts: z.string(),
  tokens_before: z.number(),
  tokens_after: z.number(),
  evicted_messages: z.number().default(0),
  summary_reused: z.boolean().default(false),
  oversized_spilled: z.union([z.number(), z.boolean()]).default(0),
  dry_run: z.boolean().default(false),
  owner_hash: z.string().nullish(),
});

/**
 * --savings --json: every figure counted from the compaction log, the usage log and the receipts, none estimated.
 * The usage log's figures (UsageTotals) are the backend's own usage: tokens in and out, and what summaries cost.
 */
export interface SavingsSummary extends UsageTotals {
  window: string;
  compactions: number;
  tokens_before: number;
  tokens_after: number;
  tokens_kept_out: number;
  pct_smaller: number;
  oversized_spills: number;
  summaries_reused: number;
  recall_calls: number;
  chars_returned: number;
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}

/** Adds up the compaction log lines and receipts since `since` (an age such as `7d`). Dry runs never count. */
export async function savingsSummary(opts: {
  since: string;
  logDir: string;
  receiptsDir: string | null;
  /** The usage log's folder (GuardianPaths.usageDir); unset, the usage figures are 0. */
  usageDir?: string;
  now?: () => Date;
  /** Team mode: only the scope owner's compactions and recalls. */
  scope?: ArchiveScope;
}): Promise<SavingsSummary> {
  const owner = opts.scope?.ownerHash;
  const from = new Date((opts.now ?? (() => new Date()))().getTime() - parseAge(opts.since));
  const { rows } = await readDailyLogs(opts.logDir, from, SavingsLineSchema);
  const out: SavingsSummary = {
    window: opts.since,
    compactions: 0,
    tokens_before: 0,
    tokens_after: 0,
    tokens_kept_out: 0,
    pct_smaller: 0,
    oversized_spills: 0,
    summaries_reused: 0,
    recall_calls: 0,
    chars_returned: 0,
    ...emptyUsageTotals(),
  };
  for (const row of rows) {
    // A dry run forwards the request unchanged, so it saved nothing (seed "Prove it"; ARCHITECTURE.md#compaction).
    if (row.dry_run) continue;
    if (owner !== undefined && row.owner_hash !== owner) continue;
    if (row.evicted_messages > 0) out.compactions += 1;
    if (row.summary_reused) out.summaries_reused += 1;
    out.oversized_spills +=
      typeof row.oversized_spilled === 'number' ? row.oversized_spilled : Number(row.oversized_spilled);
    out.tokens_before += row.tokens_before;
    out.tokens_after += row.tokens_after;
  }
  out.tokens_kept_out = Math.max(0, out.tokens_before - out.tokens_after);
  out.pct_smaller = out.tokens_before > 0 ? round1((out.tokens_kept_out / out.tokens_before) * 100) : 0;
  if (opts.usageDir !== undefined) {
    const usage = await readDailyLogs(opts.usageDir, from, UsageLogLineSchema);
    for (const row of usage.rows) if (owner === undefined || row.owner_hash === owner) addUsageRow(out, row);
  }
  const receipts = await readReceiptTotals(opts.receiptsDir, from, owner);
  out.recall_calls = receipts.recall_calls + receipts.recall_tool_calls;
  out.chars_returned = receipts.chars_returned;
  return out;
}

/** --receipts: counts only, from the receipts and the archive itself. */
export interface ReceiptsSummary {
  window: string;
  compactions: number;
  tokens_kept_out: number;
  spans_archived: number;
  archive_bytes: number;
  runs: number;
  runs_broken: number;
  sealed: boolean;
  recall_calls: number;
  recall_tool_calls: number;
  spans_opened: number;
  chars_returned: number;
  /** chars_returned / bytes of the whole archive, in percent. */
  read_back_pct: number;
}

async function archiveSize(
  spanDir: string,
  from: Date,
  scope: ArchiveScope | undefined,
): Promise<{ spans: number; windowBytes: number; totalBytes: number; runs: string[] }> {
  let runs: string[];
  try {
    runs = await scopedRunIds(spanDir, scope);
  } catch (err) {
    // No archive yet is a valid answer for receipts: zero spans, zero bytes.
    if (ArchiveError.is(err, 'ARCHIVE_NOT_FOUND'))
      return { spans: 0, windowBytes: 0, totalBytes: 0, runs: [] };
    throw err;
  }
  let spans = 0;
  let windowBytes = 0;
  let totalBytes = 0;
  for (const run of runs) {
    const files = await runFiles(spanDir, run);
    const names = [...spanNumbers(files).map(spanFileName), ...journalSegments(files)];
    for (const name of names) {
      const stat = await fsp.stat(path.join(runDir(spanDir, run), name));
      totalBytes += stat.size;
      if (stat.mtimeMs >= from.getTime() && !name.startsWith('journal-')) {
        spans += 1;
        windowBytes += stat.size;
      }
    }
  }
  return { spans, windowBytes, totalBytes, runs };
}

/** A seal check's latest word on a run: its status and how many chain lines it had; undefined when it has none. */
export interface SealKnowledge {
  verdictOf(run: string): Pick<RunVerdict, 'status' | 'lines'> | undefined;
}

export async function receiptsSummary(opts: {
  since: string;
  spanDir: string;
  anchorDir?: string | null;
  receiptsDir: string | null;
  now?: () => Date;
  /** Team mode: only the scope owner's runs and receipts. */
  scope?: ArchiveScope;
  /** What a seal check already knows of each run (the sidecar's seal monitor); the runs it does not know are verified
   * here. Unset: every run in scope is verified, as the CLI does. */
  known?: SealKnowledge;
}): Promise<ReceiptsSummary> {
  const from = new Date((opts.now ?? (() => new Date()))().getTime() - parseAge(opts.since));
  const totals = await readReceiptTotals(opts.receiptsDir, from, opts.scope?.ownerHash);
  const size = await archiveSize(opts.spanDir, from, opts.scope);
  const anchorDir = opts.anchorDir ?? null;
  let verdicts: Array<Pick<RunVerdict, 'status' | 'lines'>> = [];
  if (size.runs.length > 0 && opts.known) {
    for (const run of size.runs) {
      const known = opts.known.verdictOf(run);
      if (known) verdicts.push(known);
      else {
        // A run the check has not seen yet (new since its last full pass, another replica's): verified now.
        const v = await verifyRun({ spanDir: opts.spanDir, anchorDir, run }).catch((err: unknown) => {
          // Pruned or deleted since it was listed: no run, no verdict.
          if (ArchiveError.is(err, 'ARCHIVE_NOT_FOUND')) return undefined;
          throw err;
        });
        if (v) verdicts.push(v);
      }
    }
  } else if (size.runs.length > 0) {
    verdicts = (await verifyArchive({ spanDir: opts.spanDir, anchorDir, scope: opts.scope })).runs;
  }
  const broken = verdicts.filter((r) => r.status === 'break').length;
  return {
    window: opts.since,
    compactions: totals.compactions,
    tokens_kept_out: totals.tokens_kept_out,
    spans_archived: size.spans,
    archive_bytes: size.windowBytes,
    runs: size.runs.length,
    runs_broken: broken,
    sealed: verdicts.length > 0 && verdicts.every((r) => r.lines > 0),
    recall_calls: totals.recall_calls + totals.recall_tool_calls,
    recall_tool_calls: totals.recall_tool_calls,
    spans_opened: totals.spans_opened,
    chars_returned: totals.chars_returned,
    read_back_pct: size.totalBytes > 0 ? round1((totals.chars_returned / size.totalBytes) * 100) : 0,
  };
}
