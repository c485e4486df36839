import { Injectable } from '@nestjs/common';

import type { SpanRef } from '@guardian/archive';
import { LruMap } from '@guardian/collections';

import { GuardianConfig } from '../config/guardian-config';

/** Spilled pastes remembered per session; the one least recently asked for is archived again if it comes back. */
const MAX_SPILLS = 64;

interface SessionSlot {
  /** Digest of an oversized message -> its span: a paste that comes back every turn is archived once. */
  spills: LruMap<string, SpanRef>;
  lastCompactionAt: string | null;
}

/** Per-session state this process keeps, bounded by GUARDIAN_MAX_SESSIONS (least recently used first out). */
@Injectable()
export class SessionTable {
  private readonly slots: LruMap<string, SessionSlot>;

  constructor(config: GuardianConfig) {
    this.slots = new LruMap(config.compaction.maxSessions);
  }

  get size(): number {
    return this.slots.size;
  }

  private slot(session: string): SessionSlot {
    let s = this.slots.get(session);
    if (!s) {
      s = { spills: new LruMap(MAX_SPILLS), lastCompactionAt: null };
      this.slots.set(session, s);
    }
    return s;
  }

  /** Looking a paste up keeps it (a paste that comes back every turn) but does not count as a use of the session. */
  spilled(session: string, digest: string): SpanRef | undefined {
    return this.slots.peek(session)?.spills.get(digest);
  }

  rememberSpill(session: string, digest: string, ref: SpanRef): void {
    this.slot(session).spills.set(digest, ref);
  }

  /** Records a compaction (when `at` is given) and returns the session's latest compaction time. */
  touch(session: string, at?: string): string | null {
    const s = this.slot(session);
    if (at) s.lastCompactionAt = at;
    return s.lastCompactionAt;
  }
}
