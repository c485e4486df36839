import { z } from 'zod';

import { ArchiveError } from './archive-error';
import { utcDay } from './compaction-log';
import { FolderAppender } from './durable-fs';
import { readDailyLogs } from './jsonl';

/** Counts one recall or compaction leaves behind. Numbers only: no text, queries, paths or run ids. */
export type ReceiptCounts =
  | { kind: 'recall_call'; hits: number; chars_returned: number }
  | { kind: 'span_opened'; chars_returned: number }
  | { kind: 'compaction'; tokens_before: number; tokens_after: number }
  | { kind: 'recall_tool_call'; chars_returned: number };

const RECEIPT_KINDS = ['recall_call', 'span_opened', 'compaction', 'recall_tool_call'] as const;

/** A stored receipt line: `ts`, `kind`, and numbers. */
const ReceiptLineSchema = z.object({
  ts: z.string(),
  kind: z.enum(RECEIPT_KINDS),
  hits: z.number().nonnegative().optional(),
  chars_returned: z.number().nonnegative().optional(),
  tokens_before: z.number().nonnegative().optional(),
  tokens_after: z.number().nonnegative().optional(),
  /** Team mode: whose request or recall it was (a hash, like every owner on disk), so a developer sees their own. */
  owner_hash: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});

/**
 * What a receipt written here must be, made once: zod compiles a fast path for every schema object, and a `.strict()`
 * made per receipt was 9% of everything a busy sidecar allocated (docs/BENCHMARKS.md, soak).
 */
const StrictReceiptLine = ReceiptLineSchema.strict();

/**
 * Writes counts-only receipts to `<receiptsDir>/<replica>-<yyyymmdd>.jsonl` (GUARDIAN_RECEIPTS); a null
 * folder (GUARDIAN_RECEIPTS=0) makes every record a no-op.
 */
export class Receipts {
  private readonly now: () => Date;
  private readonly folder: FolderAppender | null;

  constructor(
    private readonly opts: {
      receiptsDir: string | null;
      replica: string;
      now?: () => Date;
      /** Milliseconds an append waits for others before they are written with one fsync (FolderAppender). */
      gatherMs?: number;
    },
  ) {
    this.now = opts.now ?? (() => new Date());
    this.folder = opts.receiptsDir === null ? null : new FolderAppender(opts.receiptsDir, opts.gatherMs ?? 0);
  }

  async record(counts: ReceiptCounts, ownerHash?: string): Promise<void> {
    const folder = this.folder;
    if (folder === null) return;
    const at = this.now();
    // Re-validated here so no caller can smuggle a string into a counts-only file.
    const line = StrictReceiptLine.parse({
      ts: at.toISOString(),
      ...counts,
      ...(ownerHash === undefined ? {} : { owner_hash: ownerHash }),
    });
    try {
      await folder.append(`${this.opts.replica}-${utcDay(at)}.jsonl`, `${JSON.stringify(line)}\n`);
    } catch (cause) {
      throw new ArchiveError('ARCHIVE_WRITE_FAILED', 'receipt not written', { cause });
    }
  }
}

/** Receipts added up over a time window. */
export interface ReceiptTotals {
  compactions: number;
  tokens_kept_out: number;
  recall_calls: number;
  recall_tool_calls: number;
  spans_opened: number;
  chars_returned: number;
}

/** Adds up the receipts since `since`; with an owner hash, only that owner's (team mode). */
export async function readReceiptTotals(
  receiptsDir: string | null,
  since: Date,
  ownerHash?: string,
): Promise<ReceiptTotals> {
  const totals: ReceiptTotals = {
    compactions: 0,
    tokens_kept_out: 0,
    recall_calls: 0,
    recall_tool_calls: 0,
    spans_opened: 0,
    chars_returned: 0,
  };
  if (receiptsDir === null) return totals;
  const { rows } = await readDailyLogs(receiptsDir, since, ReceiptLineSchema);
  for (const row of rows) {
    if (ownerHash !== undefined && row.owner_hash !== ownerHash) continue;
    totals.chars_returned += row.chars_returned ?? 0;
    if (row.kind === 'compaction') {
      totals.compactions += 1;
      totals.tokens_kept_out += Math.max(0, (row.tokens_before ?? 0) - (row.tokens_after ?? 0));
    } else if (row.kind === 'recall_call') totals.recall_calls += 1;
    else if (row.kind === 'recall_tool_call') totals.recall_tool_calls += 1;
    else totals.spans_opened += 1;
  }
  return totals;
}
