import type { LogPin } from './log-pins';
import type { LogBreak } from './log-tree-check';
import type { WriterState } from './writer-lock';

/** What a verify says of one writer's log (docs/ARCHIVE_FORMAT.md#verifying-the-log). */
export interface LogVerdict {
  log: string;
  origin: string | null;
  /** The checkpoint's tree size (entries checked). */
  size: number;
  status: 'ok' | 'pruned-ok' | 'break';
  /**
   * How far the check went: `spans` (on the volume: tree, tiles and every span file), `entries` (through a sidecar
   * as the admin: tree, tiles and entries; the span files are the sidecar's seal to check) or `hashes` (through a
   * sidecar as a developer, who is not served the entries: the tree from its hash tiles).
   */
  checked: 'spans' | 'entries' | 'hashes';
  /** Entries whose span file was removed under a prune record (GUARDIAN_KEEP_SPANS) or a pruned run (--prune). */
  pruned: number;
  /** The size of the last verified checkpoint this one was found consistent with; null the first time. */
  since: number | null;
  /** Whether this checkpoint is now the pin in the verified folder (not with `run`, a break, or a folder not writable). */
  pinned: boolean;
  break: LogBreak | null;
  /**
   * Span lines naming this log whose entry may still come: newer than their run's newest entry, and the log's writer
   * is live, or cannot be judged from here (another host). 0 through a sidecar, which serves no chains.
   */
  waiting: number;
  /** What the log's writer.json says of its writer (docs/ARCHIVE_FORMAT.md#the-log); null through a sidecar. */
  writer: WriterState | null;
}

/** What `verifyLogs` finds: each log's verdict, and the span lines that name no log (an archive older than it). */
export interface LogsReport {
  ok: boolean;
  logs: LogVerdict[];
  /** Span lines without a `log` member and without an entry anywhere: written before the log existed. */
  withoutLog: { spans: number; runs: number };
}

/** A log checked up to its pin: the verdict, its entries (when read), and the pin it earns if nothing breaks. */
export interface ExaminedLog {
  verdict: LogVerdict;
  entries: string[] | null;
  vkey: string | null;
  next: LogPin | null;
}

/** Sets a verdict's break unless it has one (the first break found is the log's). */
export function markBroken(verdict: LogVerdict, brk: LogBreak): void {
  if (verdict.break !== null) return;
  verdict.status = 'break';
  verdict.break = brk;
}
