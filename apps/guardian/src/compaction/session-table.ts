import { Injectable } from '@nestjs/common';

import type { SpanRef } from '@guardian/archive';

import { GuardianConfig } from '../config/guardian-config';

interface SessionSlot {
  /** Digest of an oversized message -> its span: a paste that comes back every turn is archived once. */
  spills: Map<string, SpanRef>;
  lastCompactionAt: string | null;
}

/**
 * Per-session state this process keeps, bounded by GUARDIAN_MAX_SESSIONS (least recently used first out).
 * A Map keeps insertion order, so re-inserting on use makes it an LRU.
 */
@Injectable()
export class SessionTable {
  private readonly slots = new Map<string, SessionSlot>();

  constructor(private readonly config: GuardianConfig) {}

  get size(): number {
    return this.slots.size;
  }

  private slot(session: string): SessionSlot {
    let s = this.slots.get(session);
    if (s) {
      this.slots.delete(session);
    } else {
      s = { spills: new Map(), lastCompactionAt: null };
    }
    this.slots.set(session, s);
    while (this.slots.size > this.config.compaction.maxSessions) {
      const oldest = this.slots.keys().next().value;
      if (oldest === undefined) break;
      this.slots.delete(oldest);
    }
    return s;
  }

  spilled(session: string, digest: string): SpanRef | undefined {
    return this.slots.get(session)?.spills.get(digest);
  }

  rememberSpill(session: string, digest: string, ref: SpanRef): void {
    const spills = this.slot(session).spills;
    spills.set(digest, ref);
    if (spills.size > 64) spills.delete(spills.keys().next().value ?? '');
  }

  /** Records a compaction (when `at` is given) and returns the session's latest compaction time. */
  touch(session: string, at?: string): string | null {
    const s = this.slot(session);
    if (at) s.lastCompactionAt = at;
    return s.lastCompactionAt;
  }
}
