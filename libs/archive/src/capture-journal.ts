import { LruMap } from '@guardian/collections';

import { sha256Hex } from './canonical-json';
import type { SealedArchive } from './sealed-archive';

export interface CaptureJournalOptions {
  archive: SealedArchive;
  /**
   * Sessions whose seen-message set is kept in memory; the one recorded least recently is forgotten first (a forgotten
   * session that comes back has its whole history appended again).
   */
  maxSessions?: number;
}

/**
 * GUARDIAN_CAPTURE=journal: records every message of a session, not only what compaction evicts, in the
 * session's run as `journal-NNNN.jsonl` segments sealed when they close (ARCHITECTURE.md#files). Clients resend their
 * whole history each turn, so only messages not seen before (by position and content) are appended.
 */
export class CaptureJournal {
  private readonly seen: LruMap<string, Set<string>>;

  constructor(private readonly opts: CaptureJournalOptions) {
    this.seen = new LruMap(opts.maxSessions ?? 1024);
  }

  /** Appends the session's new messages; returns how many were appended. */
  async record(input: {
    sessionHash: string;
    ownerHash?: string;
    sessionName?: string;
    messages: unknown[];
    at: Date;
  }): Promise<number> {
    const seen = this.sessionSet(input.sessionHash);
    const entries: { at: Date; message: unknown }[] = [];
    const keys: string[] = [];
    input.messages.forEach((message, index) => {
      const key = sha256Hex(`${index}:${JSON.stringify(message)}`);
      if (!seen.has(key)) {
        keys.push(key);
        entries.push({ at: input.at, message });
      }
    });
    if (entries.length === 0) return 0;
    await this.opts.archive.appendJournal({
      sessionHash: input.sessionHash,
      ownerHash: input.ownerHash,
      sessionName: input.sessionName,
      entries,
    });
    // Marked seen only once written, so a failed append is retried by the next turn's resend.
    for (const key of keys) seen.add(key);
    return entries.length;
  }

  /** Closes and seals every open segment (call on shutdown; the archive's log is stopped by its owner after). */
  close(): Promise<void> {
    return this.opts.archive.closeJournals();
  }

  private sessionSet(sessionHash: string): Set<string> {
    let set = this.seen.get(sessionHash);
    if (set === undefined) {
      set = new Set();
      this.seen.set(sessionHash, set);
    }
    return set;
  }
}
