import type {
  ChainHead,
  DigestList,
  ReadSpanResult,
  ReceiptsSummary,
  RunsPage,
  SavingsSummary,
  SealReport,
  SearchResult,
  SpansPage,
} from '@guardian/archive';

/**
 * The bodies guardian's own endpoints answer (ARCHITECTURE.md#http-surface, docs/team.md), one type each. The sidecar's controllers
 * declare them as their return types and the tools read them through {@link GuardianClient}, so a field renamed on
 * one side does not compile on the other.
 */

/** `GET /readyz`. */
export interface ReadyAnswer {
  status: 'ready' | 'draining';
  version: string;
  span_volume: 'writable' | 'full' | 'read-only' | 'missing';
  memo_store: 'memory' | 'redis';
  redis: string;
  upstream: 'ok' | 'down' | 'unknown';
}

/** `GET /guardian/usage[?session=][&owner=]`: the session's latest main request (ADR 0010). */
export interface UsageAnswer {
  window: number;
  used_after_compaction: number;
  pct: number;
  count_source: string;
  /** What named the session: `x-guardian-session`, a client's own header, or `derived`; null in older records. */
  session_source: string | null;
  model: string | null;
  last_compaction_at: string | null;
}

/** One row of the dashboard's window-fill table. */
export interface StatsSession {
  /** First 8 hex of the session hash. */
  session: string;
  /** The name the session was sent with (its header or the client's own id); null for a derived session. */
  name: string | null;
  model: string;
  window: number;
  used: number;
  pct: number;
  count_source: string;
  /** What named the session (see UsageAnswer.session_source). */
  session_source: string | null;
  at: string;
}

/** `GET /guardian/stats`: counters and settings, no message text. */
export interface StatsAnswer {
  version: string;
  upstream: string;
  replica: string;
  started_at: string;
  num_ctx: number | null;
  window_source: string;
  windows: Record<string, { window: number; source: string }>;
  effective_input_budget: number | null;
  compactions_performed: number;
  summaries_reused: number;
  summaries_chunked: number;
  summary_retries: number;
  summary_checkpoints: number;
  summariser_calls: number;
  precompact: { done: number; used: number; failed: number; running: number; wasted: number };
  summary_waits: number;
  /** Writes still running behind answers already sent (span commits, log lines, hand-offs); 0 once on the volume. */
  behind: number;
  summariser_circuits: Record<
    string,
    { state: 'closed' | 'open' | 'half_open'; failures: number; retry_at: string | null }
  >;
  summary_wait_seconds: number;
  oversized_spills: number;
  compactions_with_pins: number;
  last_pins_carried: number;
  fail_open: Record<string, number>;
  archive_deferred: number;
  overflow_recovered: number;
  /** Answers whose prompt the backend truncated without saying so (issue 28 item 5). */
  backend_truncations: number;
  tokens_kept_out: number;
  /** Requests whose size alone proved they fit: forwarded unchanged without being parsed (ADR 0013). */
  passthrough_by_size: number;
  dry_run: boolean;
  keep_recent: { messages: number } | { fraction: number };
  memo_store: string;
  upstream_status: 'ok' | 'down' | 'unknown';
  /** Team mode: whose sessions `sessions` lists (a developer's own), null for everyone's. */
  sessions_of: string | null;
  seal_status: 'ok' | 'broken' | 'unknown';
  seal_checked_at: string | null;
  sessions: StatsSession[];
}

/**
 * `GET /guardian/sessions/<id>/handoff` (issue 32 item 5): what a new session needs to pick the work up, read from the
 * history of the session's latest compaction. Message text: served under the archive's access rules.
 */
export interface HandoffAnswer {
  goal: string | null;
  pins: { text: string; status: 'current' | 'superseded' }[];
  decisions: string[];
  files: string[];
  open_question: string | null;
  messages: number;
  compacted_at: string;
  /** The run folder the hand-off files were written into, when the session's spans are on this volume. */
  run: string | null;
}

/** One entry of `GET /guardian/events`: counts and names only, never message text. */
interface EventAnswer {
  kind:
    | 'compaction'
    | 'summary_chunked'
    | 'summary_refused'
    | 'oversized_spill'
    | 'newest_cut'
    | 'stale_recall'
    | 'tool_results_cleared'
    | 'fail_open'
    | 'overflow_recovered'
    | 'backend_truncation'
    | 'archive_deferred'
    // A provider's compaction protocol served (docs/native-compaction.md): `entry` and `outcome` as
    // guardian_native_requests_total labels them.
    | 'native_compaction'
    // A compaction handle sent back that was rebuilt from its span, could not be, or was refused (`outcome`).
    | 'native_handle';
  at: string;
  route: string;
  model?: string;
  /** First 8 hex of the session hash. */
  session?: string;
  /** The kind's own counts (`tokens_before`, `stage`, ...). */
  [key: string]: string | number | boolean | null | undefined;
}

/**
 * `GET /guardian/events`: the recent events, the caller's own in team mode. With `Accept: text/event-stream` the same
 * objects arrive one per SSE event instead.
 */
export interface EventsAnswer {
  events: EventAnswer[];
}

/** `GET /guardian/archive/runs`. */
export type RunsAnswer = RunsPage;
/** `GET /guardian/archive/runs/:run/spans`. */
export type SpansAnswer = SpansPage;
/** `GET /guardian/archive/runs/:run/spans/:span` (span 0: the run's capture journal). */
export type ReadAnswer = ReadSpanResult;
/** `GET /guardian/archive/digests`. */
export type DigestsAnswer = DigestList;
/** `GET /guardian/archive/search`; `complete: false` when the search stopped at its time limit. */
export type SearchAnswer = SearchResult;
/** `GET /guardian/archive/seal`. */
export type SealAnswer = SealReport;
/** `GET /guardian/archive/heads`. */
export interface HeadsAnswer {
  heads: ChainHead[];
}
/** `GET /guardian/archive/receipts?since=`. */
export type ReceiptsAnswer = ReceiptsSummary;
/** `GET /guardian/archive/savings?since=`. */
export type SavingsAnswer = SavingsSummary;

/** One writer's log as `GET /guardian/archive/logs` lists it (docs/ARCHIVE_FORMAT.md#the-log). */
interface LogListing {
  name: string;
  origin: string | null;
  size: number | null;
  vkey: string | null;
  /** This sidecar's own log (served at /guardian/archive/log/...). */
  own: boolean;
  /**
   * Whether the caller is served this log's entry bundles (the admin, or any reader outside team mode): they name
   * every owner's runs, so a developer checks the tree from the hash tiles instead.
   */
  entries_served: boolean;
}

/** `GET /guardian/archive/logs`. */
export interface LogsAnswer {
  logs: LogListing[];
}

/** `POST /guardian/capture`: transcript lines of a Claude Code session, as the hook archives them. */
export interface CaptureRequest {
  /** sha256 hex of Claude Code's session id (the hook's own session hash). */
  session_hash: string;
  /** Transcript byte offset of the first line: where the capture resumes. */
  offset: number;
  model: string;
  /** The lines, each parsed JSON when it round-trips byte for byte, else its text (libs/archive capture-runs). */
  lines: unknown[];
}

/**
 * What the sidecar did with a capture. `accepted: false` wrote nothing: the archive ends at `archived_end`, not at the
 * offset sent, and the hook resends from there.
 */
export interface CaptureAnswer {
  accepted: boolean;
  run: string | null;
  span: number | null;
  archived_end: number;
}
