import { sha256Hex } from './canonical-json';
import type { SealedArchive } from './sealed-archive';

export interface CaptureJournalOptions {
  archive: SealedArchive;
  /** Sessions whose seen-message set is kept in memory; the oldest is forgotten first. */
  maxSessions?: number;
}

/**
 * GUARDIAN_CAPTURE=journal: records every message of a session, not only what compaction evicts, in the
 * session's run as `journal-NNNN.jsonl` segments sealed when they close (ARCHITECTURE.md#files). Clients resend their
 * whole history each turn, so only messages not seen before (by position and content) are appended.
 */
export class CaptureJournal {
  private readonly seen = new Map<string, Set<string>>();
  private readonly maxSessions: number;

  constructor(private readonly opts: CaptureJournalOptions) {
    this.maxSessions = opts.maxSessions ?? 1024;
  }

  /** Appends the session's new messages; returns how many were appended. */
  async record(input: {
    sessionHash: string;
    ownerHash?: string;
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
      entries,
    });
    // Marked seen only once written, so a failed append is retried by the next turn's resend.
    for (const key of keys) seen.add(key);
    return entries.length;
  }

  /** Closes and seals every open segment (call on shutdown). */
  close(): Promise<void> {
    return this.opts.archive.close();
  }

  private sessionSet(sessionHash: string): Set<string> {
    let set = this.seen.get(sessionHash);
    if (set === undefined) {
      if (this.seen.size >= this.maxSessions) {
        const oldest = this.seen.keys().next();
        if (oldest.done !== true) this.seen.delete(oldest.value);
      }
      set = new Set();
      this.seen.set(sessionHash, set);
    }
    return set;
  }
}
