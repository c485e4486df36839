import type { RunSummary, SpanListing } from './archive-reader';
import type { ChainHead } from './chain-reader';
import type { DigestList, ReadSpanResult } from './recall-read';
import type { ReceiptsSummary, SavingsSummary } from './savings';
import type { SearchResult } from './search';
import type { RunVerdict } from './verify';

/** A page of runs, newest first; `next` is the cursor (`after`) of the following page, null on the last. */
export interface RunsPage {
  runs: RunSummary[];
  next: string | null;
}

/** A page of one run's span files, ascending; `next` is the span number to continue after, null on the last. */
export interface SpansPage {
  run: string;
  spans: SpanListing[];
  next: number | null;
}

/** The seal check (`--verify`) over a page of runs: `ok` when every run on it verifies. */
export interface SealReport {
  ok: boolean;
  runs: RunVerdict[];
  next: string | null;
}

export interface PageRequest<Cursor> {
  after?: Cursor;
  limit?: number;
}

export interface ReadSpanRequest {
  run: string;
  /** Span number; 0 is the run's capture journal. */
  index: number;
  start?: number;
  end?: number;
  maxChars?: number;
}

export interface DigestsRequest {
  run?: string;
  max?: number;
  maxTokens?: number;
}

export interface SearchRequest {
  term: string;
  run?: string;
  /** A session hash or prefix, or the raw X-Guardian-Session value. */
  session?: string;
  max?: number;
}

export interface SealRequest extends PageRequest<string> {
  run?: string;
}

/**
 * Everything the recall tools read from an archive. Two implementations: {@link LocalArchive} over a span folder (the
 * CLIs on a laptop, and the sidecar's own `/guardian/archive/*` API, scoped to the caller), and the typed HTTP client's
 * remote archive, which reads through that API (team mode). The tools print the same output from either.
 */
export interface ArchiveSource {
  runs(page?: PageRequest<string>): Promise<RunsPage>;
  spans(run: string, page?: PageRequest<number>): Promise<SpansPage>;
  readSpan(req: ReadSpanRequest): Promise<ReadSpanResult>;
  digests(req: DigestsRequest): Promise<DigestList>;
  search(req: SearchRequest): Promise<SearchResult>;
  seal(req: SealRequest): Promise<SealReport>;
  heads(): Promise<ChainHead[]>;
  receipts(req: { since: string }): Promise<ReceiptsSummary>;
  savings(req: { since: string }): Promise<SavingsSummary>;
}

/** Every run of a source, following its pages. */
export async function allRuns(source: ArchiveSource): Promise<RunSummary[]> {
  const out: RunSummary[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await source.runs(after === undefined ? {} : { after });
    out.push(...page.runs);
    if (page.next === null) return out;
    after = page.next;
  }
}

/** Every span file of one run, ascending, following its pages. */
export async function allSpans(source: ArchiveSource, run: string): Promise<SpanListing[]> {
  const out: SpanListing[] = [];
  let after: number | undefined;
  for (;;) {
    const page = await source.spans(run, after === undefined ? {} : { after });
    out.push(...page.spans);
    if (page.next === null) return out;
    after = page.next;
  }
}

/** The seal check over every run of a source (or one), page by page; `onPage` reports progress. */
export async function sealAll(
  source: ArchiveSource,
  opts: { run?: string; onPage?: (done: number) => void } = {},
): Promise<{ ok: boolean; runs: RunVerdict[] }> {
  const runs: RunVerdict[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await source.seal({ run: opts.run, ...(after === undefined ? {} : { after }) });
    runs.push(...page.runs);
    opts.onPage?.(runs.length);
    if (page.next === null) break;
    after = page.next;
  }
  return { ok: runs.every((r) => r.status !== 'break'), runs };
}
