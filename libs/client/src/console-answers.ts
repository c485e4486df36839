/**
 * The bodies of the console's endpoints (issue 31, ARCHITECTURE.md#http-surface): history, sessions and usage, all
 * read from the compaction log on the volume and scoped to the caller. Counts and names only, never message text.
 */

/** One UTC minute that had compactions. */
export interface HistoryBucket {
  /** ISO-8601 UTC start of the minute. */
  at: string;
  compactions: number;
}

/** `GET /guardian/history?minutes=`: compactions per minute over the last `minutes`, only the minutes that had one. */
export interface HistoryAnswer {
  /** The sidecar's clock when it answered. */
  now: string;
  minutes: number;
  buckets: HistoryBucket[];
}

/** One entry of `GET /guardian/sessions`. */
export interface SessionListEntry {
  /** The session hash (sha256 hex): what `/guardian/sessions/<id>` takes. */
  id: string;
  /** The name it was sent with (header value or the client's own id); null for a derived session or one not seen
   * since the sidecar started (the name is kept with the usage record, never on disk). */
  name: string | null;
  model: string | null;
  turns: number | null;
  window: number | null;
  used: number | null;
  pct: number | null;
  compactions: number;
  tokens_before: number;
  tokens_after: number;
  summariser_calls: number;
  pins: number;
  last_compaction_at: string | null;
  /** The latest request seen (usage record), else the last compaction. */
  at: string | null;
}

/** `GET /guardian/sessions`: the caller's sessions, newest first. */
export interface SessionsAnswer {
  /** Team mode: whose sessions these are; null for everyone's. */
  sessions_of: string | null;
  sessions: SessionListEntry[];
}

/** One compaction log line of a session. */
export interface SessionCompaction {
  at: string;
  model: string;
  tokens_before: number;
  tokens_after: number;
  evicted_messages: number;
  summariser_calls: number;
  pins: number;
  /** Where its evicted messages are archived (read them at `/guardian/archive/runs/<run>/spans/<span>`). */
  run: string | null;
  span: number | null;
}

/** `GET /guardian/sessions/<id>`: one session's compactions over the last 7 days, newest first. */
export interface SessionAnswer {
  id: string;
  name: string | null;
  compactions: SessionCompaction[];
}

/** Usage figures of one scope over one period; kept out is tokens_before - tokens_after, as recall --savings has it. */
export interface UsageFigures {
  /** Compaction log lines (requests guardian compacted or cut), dry runs left out. */
  requests: number;
  compactions: number;
  tokens_before: number;
  tokens_after: number;
  tokens_kept_out: number;
  summariser_calls: number;
  /** tokens_kept_out at GUARDIAN_COST_PER_1M_INPUT_USD (0 when unset). */
  cost_kept_out_usd: number;
}

export interface UsageModelFigures extends UsageFigures {
  model: string;
}

interface UsageDeveloper {
  /** The owner's name from the tokens file; null for requests sent without a token, or an owner no longer named. */
  owner: string | null;
  owner_hash: string | null;
  totals: UsageFigures;
  models: UsageModelFigures[];
}

export interface UsagePeriod {
  total: UsageFigures;
  developers: UsageDeveloper[];
}

/** `GET /guardian/usage/summary`: the caller's usage (admin: everyone's) for the last 24 hours and 7 days. */
export interface UsageSummaryAnswer {
  price_per_1m_input_usd: number;
  periods: { '24h': UsagePeriod; '7d': UsagePeriod };
}
