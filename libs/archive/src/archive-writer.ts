/** Kinds of archived span (ARCHIVE_FORMAT.md). */
export type SpanKind = 'compaction' | 'continuation' | 'oversized' | 'capture';

/** What the sidecar hands the archive for one eviction. Messages are stored verbatim, as the client sent them. */
export interface SpanInput {
  kind: SpanKind;
  /** sha256 hex of the session key (never the raw header value). */
  sessionHash: string;
  /** sha256 hex of the owner (team mode), else undefined. */
  ownerHash?: string;
  /**
   * The name the session was sent with (its header value or the client's own id, without the owner), kept in the
   * run's run.json beside the text it names, so the console lists the session by it after a restart (ADR 0025,
   * amended). Absent for a derived session.
   */
  sessionName?: string;
  /** `chat` | `messages` | `responses`. */
  route: string;
  model: string;
  /** The evicted messages (or the one oversized message), verbatim. */
  messages: unknown[];
  /** Index in the client's request of the first archived message. */
  firstIndex: number;
  /** The summary that replaced them (compaction, continuation). */
  summary?: string;
  /** `<run>/<NNNN>.json` this span extends (continuation). */
  continues?: string;
  /** Oversized spill: the message's size in tokens. */
  originalTokens?: number;
  tokensBefore?: number;
  tokensAfter?: number;
  /** Time of the eviction (the caller's clock). */
  at: Date;
}

/** Where a span landed. `ref` is what summaries and pointers name: `<run>/<NNNN>.json`, never an absolute path. */
export interface SpanRef {
  run: string;
  span: number;
  ref: string;
}

/**
 * The port the compaction path writes through. A write either lands whole (span file fsynced and renamed,
 * chain line appended and fsynced) or throws; the caller then defers (ARCHITECTURE.md#fail-open rule 3).
 */
export abstract class ArchiveWriter {
  abstract write(input: SpanInput): Promise<SpanRef>;
  /**
   * What a request waits for (ADR 0013): the span file fsynced and renamed into place and its chain line written,
   * or a throw. `sealed` settles when the run's commit has made the name and the line durable (or rejects). `logged`
   * settles once a signed checkpoint of the writer's log covers the span, or the commit or the log failed (it never
   * rejects: the log is not the span's seal, docs/ARCHIVE_FORMAT.md#the-log).
   */
  abstract place(input: SpanInput): Promise<SpanRef & { sealed: Promise<void>; logged: Promise<void> }>;
}
