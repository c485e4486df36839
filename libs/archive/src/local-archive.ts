import { listRuns, listSpans } from './archive-reader';
import type {
  ArchiveSource,
  DigestsRequest,
  PageRequest,
  ReadSpanRequest,
  RunsPage,
  SealReport,
  SealRequest,
  SearchRequest,
  SpansPage,
} from './archive-source';
import type { ChainHead } from './chain-reader';
import type { ArchiveScope } from './owners';
import { LogProofs } from './log-proofs';
import { listDigests, readSpan, type DigestList, type ReadSpanResult } from './recall-read';
import type { ReceiptCounts, Receipts } from './receipts';
import {
  receiptsSummary,
  savingsSummary,
  type ReceiptsSummary,
  type SavingsSummary,
  type SealKnowledge,
} from './savings';
import { searchArchive, type SearchResult } from './search';
import { chainHeads, verifyArchive } from './verify';

/** Where a local archive lives, who reads it, and what it records about reads. */
export interface LocalArchiveOptions {
  spanDir: string;
  anchorDir: string | null;
  logDir: string;
  /** The usage log (tokens in and out, summariser tokens); unset, --savings has no usage figures. */
  usageDir?: string;
  receiptsDir: string | null;
  /** Team mode: the runs one owner may see (the sidecar's API sets it per caller); unset reads every run. */
  scope?: ArchiveScope;
  /** Team mode: the caller's owner name, so a raw session value is hashed as that owner's session. */
  sessionOwner?: string;
  /** Counts-only receipts of recalls (a search, a span opened); none when unset. */
  receipts?: Receipts;
  /** A receipt that could not be written never fails the recall (seed: fail open); it is reported here. */
  onReceiptError?: (err: unknown, kind: ReceiptCounts['kind']) => void;
  /** Searches stop after this long and answer what they found with `complete: false` (the API's bound). */
  searchTimeoutMs?: number;
  /** The sidecar's seal monitor: receipts take its word on the runs it has verified instead of verifying all of
   * them on every call (the CLI leaves it unset and verifies). */
  sealKnowledge?: SealKnowledge;
  /** Progress of a seal check over many runs (the CLI shows it on a terminal). */
  onVerifyProgress?: (done: number, total: number) => void;
  now?: () => Date;
  /** Finds each answer's log entry and proof; one per process keeps what it read (default: a new one). */
  logProofs?: LogProofs;
}

/**
 * The archive in a span folder, read through the library's own functions. The recall CLI, the MCP server and the
 * doctor use it on a laptop; the sidecar's `/guardian/archive/*` API uses it with the caller's scope, so local and
 * remote reads are one implementation (issue 15).
 */
export class LocalArchive implements ArchiveSource {
  private readonly logProofs: LogProofs;

  constructor(private readonly opts: LocalArchiveOptions) {
    this.logProofs = opts.logProofs ?? new LogProofs(opts.spanDir);
  }

  async runs(page: PageRequest<string> = {}): Promise<RunsPage> {
    const { limit } = page;
    const runs = await listRuns({
      spanDir: this.opts.spanDir,
      scope: this.opts.scope,
      after: page.after,
      limit: limit === undefined ? undefined : limit + 1,
    });
    if (limit === undefined || runs.length <= limit) return { runs, next: null };
    const shown = runs.slice(0, limit);
    return { runs: shown, next: shown[shown.length - 1]?.run ?? null };
  }

  async spans(run: string, page: PageRequest<number> = {}): Promise<SpansPage> {
    const { limit } = page;
    const spans = await listSpans({
      spanDir: this.opts.spanDir,
      run,
      scope: this.opts.scope,
      after: page.after,
      limit: limit === undefined ? undefined : limit + 1,
    });
    if (limit === undefined || spans.length <= limit) return { run, spans, next: null };
    const shown = spans.slice(0, limit);
    return { run, spans: shown, next: shown[shown.length - 1]?.span ?? null };
  }

  async readSpan(req: ReadSpanRequest): Promise<ReadSpanResult> {
    const read = await readSpan({ spanDir: this.opts.spanDir, scope: this.opts.scope, ...req });
    await this.record({ kind: 'span_opened', chars_returned: read.text.length });
    const [proved] = await this.logProofs.attach([read]);
    return proved ?? read;
  }

  digests(req: DigestsRequest): Promise<DigestList> {
    return listDigests({ spanDir: this.opts.spanDir, scope: this.opts.scope, ...req });
  }

  async search(req: SearchRequest): Promise<SearchResult> {
    const timeout = this.opts.searchTimeoutMs;
    const result = await searchArchive({
      spanDir: this.opts.spanDir,
      scope: this.opts.scope,
      sessionOwner: this.opts.sessionOwner,
      signal: timeout === undefined ? undefined : AbortSignal.timeout(timeout),
      ...req,
    });
    const chars = result.hits.reduce((sum, h) => sum + h.snippet.length, 0);
    // Counts only: no term, no run id, no text (seed: "Every recall tool leaves a counts-only receipt").
    await this.record({ kind: 'recall_call', hits: result.hits.length, chars_returned: chars });
    return { ...result, hits: await this.logProofs.attach(result.hits) };
  }

  seal(req: SealRequest): Promise<SealReport> {
    return verifyArchive({
      spanDir: this.opts.spanDir,
      anchorDir: this.opts.anchorDir,
      scope: this.opts.scope,
      run: req.run,
      after: req.after,
      limit: req.limit,
      onProgress: this.opts.onVerifyProgress,
    });
  }

  heads(): Promise<ChainHead[]> {
    return chainHeads({ spanDir: this.opts.spanDir, scope: this.opts.scope });
  }

  receipts(req: { since: string }): Promise<ReceiptsSummary> {
    return receiptsSummary({
      since: req.since,
      spanDir: this.opts.spanDir,
      anchorDir: this.opts.anchorDir,
      receiptsDir: this.opts.receiptsDir,
      now: this.opts.now,
      scope: this.opts.scope,
      known: this.opts.sealKnowledge,
    });
  }

  savings(req: { since: string }): Promise<SavingsSummary> {
    return savingsSummary({
      since: req.since,
      logDir: this.opts.logDir,
      usageDir: this.opts.usageDir,
      receiptsDir: this.opts.receiptsDir,
      now: this.opts.now,
      scope: this.opts.scope,
    });
  }

  private async record(counts: ReceiptCounts): Promise<void> {
    const receipts = this.opts.receipts;
    if (receipts === undefined) return;
    try {
      await receipts.record(counts, this.opts.scope?.ownerHash);
    } catch (err) {
      this.opts.onReceiptError?.(err, counts.kind);
    }
  }
}
