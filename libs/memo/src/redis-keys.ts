import { createHash } from 'node:crypto';

const SAFE_PART = /^[A-Za-z0-9_-]{1,128}$/;

function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/**
 * Every Redis key the memo uses, under one prefix so that several deployments can share a Redis.
 * Session values may carry raw header text, and a header value is never used raw in a key (ARCHITECTURE.md#sessions),
 * so the session part is always its sha256; a prefix hash is used as is when it is already key-safe.
 */
export class RedisKeys {
  constructor(readonly prefix: string) {}

  /** The hashed form of a session, as it appears in keys and in the recent-usage set. */
  session(session: string): string {
    return sha256(session);
  }

  memo(session: string, prefixHash: string): string {
    return `${this.prefix}memo:${this.session(session)}:${this.part(prefixHash)}`;
  }

  /** A capped list of cut lengths, most recent first. */
  cuts(session: string): string {
    return `${this.prefix}cuts:${this.session(session)}`;
  }

  lock(session: string, prefixHash: string): string {
    return `${this.prefix}lock:${this.session(session)}:${this.part(prefixHash)}`;
  }

  usage(session: string): string {
    return this.usageByHash(this.session(session));
  }

  usageByHash(sessionHash: string): string {
    return `${this.prefix}usage:${sessionHash}`;
  }

  /**
   * Sorted set of session hashes scored by the time of their latest usage record (a session part is 64 hex, never
   * "recent"); one per owner in team mode beside the one of every session.
   */
  recentUsage(owner?: string): string {
    return owner === undefined
      ? `${this.prefix}usage:recent`
      : `${this.prefix}usage:recent:${this.part(owner)}`;
  }

  /** A hash of one minute's compactions (ms at the minute's start), one field per owner hash (`-`: no token). */
  history(minute: number): string {
    return `${this.prefix}history:${minute}`;
  }

  private part(value: string): string {
    return SAFE_PART.test(value) ? value : sha256(value);
  }
}
