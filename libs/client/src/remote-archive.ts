import type {
  ArchiveSource,
  LogSource,
  ChainHead,
  DigestsRequest,
  PageRequest,
  ReadSpanRequest,
  RunsPage,
  SealReport,
  SealRequest,
  SearchRequest,
  SpansPage,
} from '@guardian/archive';

import type {
  DigestsAnswer,
  HeadsAnswer,
  LogsAnswer,
  ReadAnswer,
  ReceiptsAnswer,
  SavingsAnswer,
  SearchAnswer,
} from './api-types';
import { ARCHIVE_API_LIMITS } from './api-limits';
import type { GuardianClient } from './guardian-client';

/** A count asked of the API, within its cap (the API answers 400 past it; the tools say "N more" instead). */
function capped(value: number | undefined, bounds: { max: number }): number | undefined {
  return value === undefined ? undefined : Math.min(value, bounds.max);
}

/**
 * The archive read through the sidecar's `/guardian/archive/*` API (team mode): the same {@link ArchiveSource} the
 * tools read locally, so they print the same output. The sidecar scopes every answer to the token's owner, bounds
 * it (pages, a result cap, a search time limit), and records the recall receipts.
 */
export class RemoteArchive implements ArchiveSource {
  constructor(private readonly client: GuardianClient) {}

  runs(page: PageRequest<string> = {}): Promise<RunsPage> {
    return this.client.getJson<RunsPage>('guardian/archive/runs', { after: page.after, limit: page.limit });
  }

  spans(run: string, page: PageRequest<number> = {}): Promise<SpansPage> {
    return this.client.getJson<SpansPage>(`guardian/archive/runs/${encodeURIComponent(run)}/spans`, {
      after: page.after,
      limit: page.limit,
    });
  }

  readSpan(req: ReadSpanRequest): Promise<ReadAnswer> {
    return this.client.getJson<ReadAnswer>(
      `guardian/archive/runs/${encodeURIComponent(req.run)}/spans/${encodeURIComponent(String(req.index))}`,
      { start: req.start, end: req.end, max_chars: capped(req.maxChars, ARCHIVE_API_LIMITS.readChars) },
    );
  }

  digests(req: DigestsRequest): Promise<DigestsAnswer> {
    return this.client.getJson<DigestsAnswer>('guardian/archive/digests', {
      run: req.run,
      max: capped(req.max, ARCHIVE_API_LIMITS.digests),
      max_tokens: capped(req.maxTokens, ARCHIVE_API_LIMITS.digestTokens),
    });
  }

  search(req: SearchRequest): Promise<SearchAnswer> {
    return this.client.getJson<SearchAnswer>('guardian/archive/search', {
      term: req.term,
      run: req.run,
      session: req.session,
      max: capped(req.max, ARCHIVE_API_LIMITS.searchHits),
    });
  }

  seal(req: SealRequest): Promise<SealReport> {
    return this.client.getJson<SealReport>('guardian/archive/seal', {
      run: req.run,
      after: req.after,
      limit: req.limit,
    });
  }

  async heads(): Promise<ChainHead[]> {
    return (await this.client.getJson<HeadsAnswer>('guardian/archive/heads')).heads;
  }

  receipts(req: { since: string }): Promise<ReceiptsAnswer> {
    return this.client.getJson<ReceiptsAnswer>('guardian/archive/receipts', { since: req.since });
  }

  savings(req: { since: string }): Promise<SavingsAnswer> {
    return this.client.getJson<SavingsAnswer>('guardian/archive/savings', { since: req.since });
  }

  /** `GET /guardian/archive/logs`: every writer's log on the sidecar's volume. */
  logs(): Promise<LogsAnswer> {
    return this.client.getJson<LogsAnswer>('guardian/archive/logs');
  }

  /** A writer's log as the sidecar serves it (`/guardian/archive/logs/<name>/...`), for the log verifier. */
  logSource(name: string): LogSource {
    const base = `guardian/archive/logs/${encodeURIComponent(name)}/`;
    return { name, read: (rel) => this.client.getBytes(base + rel) };
  }
}
