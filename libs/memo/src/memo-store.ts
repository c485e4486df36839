/**
 * What the sidecar remembers about one evicted stretch of one conversation: the summary that replaced it,
 * the pins it carried, and where its originals were archived. Keyed by (session hash, prefix hash):
 * ARCHITECTURE.md#sessions, ARCHITECTURE.md#fail-open.
 */
export interface MemoEntry {
  /** The summary text that stands in for the evicted prefix. */
  summary: string;
  /** `## Must Keep` bullets collected so far; carried even when a later summary omits them. */
  mustKeep: string[];
  /** Identifiers of the evicted messages the kept ones still mentioned when the cut was made (issue 32 item 4). */
  anchors?: string[];
  /**
   * The instruction ledger a native compaction's block carries (docs/native-compaction.md): its client resends none of
   * the messages it was read from, so it is kept here, as the pins are in `mustKeep`. Guardian's own compactions
   * derive theirs from the messages each turn resends and leave it out.
   */
  ledger?: string[];
  /** Number of leading conversation messages this summary covers (the cut). */
  cut: number;
  /** Where this entry's own stretch starts (the previous cut; 0 for the first). */
  from?: number;
  /** Hash of the covered prefix (the key). */
  prefixHash: string;
  /** `<run>/<NNNN>.json` of the span holding this stretch; absent while the archive write is deferred. */
  span?: string;
  /**
   * Set while messages [pendingFrom, cut) are not archived (the volume was full or read-only:
   * ARCHITECTURE.md#fail-open rule 3). The next
   * turn that resends them writes them, whether it reuses this cut or makes a new one. An entry without it and
   * without `span` (written by an older version) is pending from `from`.
   */
  pendingFrom?: number;
  /** The newest written spans of the continuation chain, oldest first (at most MAX_MEMO_SPANS). */
  spans: string[];
  /** How many spans the chain has in all, when more than `spans` holds. */
  spanTotal?: number;
  /** Summarised in the background ahead of need (issue 14), and not yet reused by a client request. */
  precomputed?: boolean;
  /**
   * Of a summary made ahead of need: the hash of what the summariser was asked (the transcript lines, the summary it
   * extends, the limits). A client request takes it only when it would have asked exactly that (ADR 0009).
   */
  asked?: string;
  /** The summary is a checkpoint written without a model: the summariser failed for this stretch (issue 20). */
  checkpoint?: boolean;
  /** Estimated tokens of `summary` (so a reuse needs no recount). */
  summaryTokens: number;
  /** ISO-8601 UTC. */
  createdAt: string;
}

/** The request a session's usage follows (ADR 0010), as `/guardian/usage` reports it. */
export interface UsageRecord {
  session: string;
  window: number;
  used_after_compaction: number;
  pct: number;
  count_source: 'tokenize' | 'tokenize+estimate' | 'calibrated' | 'estimate';
  model: string;
  last_compaction_at: string | null;
  /** ISO-8601 UTC of the request. */
  at: string;
  /** Tools that request offered; a later request with fewer is a helper (ADR 0010). Absent in older records. */
  tools?: number;
  /** Team mode: the owner hash of the session's developer, so their dashboard and status line see only theirs. */
  owner?: string;
  /**
   * The name the session was sent with (its header value or the client's own id, without the owner), so the
   * dashboard lists what its developer recognises (issue 31). Absent for a derived session and in older records.
   */
  name?: string;
  /** Requests of the session's main conversation answered so far (ADR 0010: probes and helpers are not counted). */
  turns?: number;
  /** What named the session: the header it came from, or `derived` (issue 28 item 1). Absent in older records. */
  session_source?: string;
}

/** A held lock on one (session, prefix) stretch; release it when the summary is stored or abandoned. */
export interface MemoLock {
  release(): Promise<void>;
}

/**
 * The memo port. Two implementations: in-memory (one process) and Redis (many replicas).
 * Every method is fail-soft for the caller: an implementation that loses its backing store answers
 * from local state, never throws into the request path.
 */
export abstract class MemoStore {
  abstract readonly kind: 'memory' | 'redis';
  abstract get(session: string, prefixHash: string): Promise<MemoEntry | undefined>;
  abstract put(session: string, entry: MemoEntry): Promise<void>;
  /** Cut lengths recently stored for this session, most recent first (bounded, deduplicated). */
  abstract cuts(session: string): Promise<number[]>;
  /** Try to take the lock for a stretch; undefined when someone else holds it. */
  abstract lock(session: string, prefixHash: string, ttlMs: number): Promise<MemoLock | undefined>;
  /** Wait until the entry exists or the holder's lock is gone, at most `timeoutMs`; the entry or undefined. */
  abstract waitFor(session: string, prefixHash: string, timeoutMs: number): Promise<MemoEntry | undefined>;
  abstract putUsage(record: UsageRecord): Promise<void>;
  /**
   * A session's usage, or the most recent of any session when `session` is undefined (of the `owner`'s sessions when
   * an owner hash is given).
   */
  abstract getUsage(session?: string, owner?: string): Promise<UsageRecord | undefined>;
  /** Sessions with usage, most recent first, at most `limit` (the dashboard's window-fill list); one owner's if given. */
  abstract recentUsage(limit: number, owner?: string): Promise<UsageRecord[]>;
  /**
   * Counts one compaction in its minute (the console's chart, issue 31 item 1): in the process, and in Redis when one
   * is configured, so every replica's page shows every replica's compactions. `owner` is the owner hash in team mode.
   */
  abstract countCompaction(atMs: number, owner?: string): Promise<void>;
  /** Compactions per minute (ms at the minute's start) from `fromMs` to `toMs`; one owner's, or everyone's. */
  abstract compactionHistory(fromMs: number, toMs: number, owner?: string): Promise<Map<number, number>>;
  abstract close(): Promise<void>;
}
