import { randomUUID } from 'node:crypto';

import { LruMap } from '@guardian/collections';

import { newerUsage, usageTime } from './memo-codec';
import { MemoError } from './memo-error';
import { MemoStore, type MemoEntry, type MemoLock, type UsageRecord } from './memo-store';
import { MinuteHistory } from './minute-history';

/** Options of the one-process memo. */
export interface InMemoryMemoStoreOptions {
  /** Sessions kept (GUARDIAN_MAX_SESSIONS, default 1024); the least recently used is dropped first. */
  maxSessions: number;
  /** Memo entries kept per session (default 64); the least recently used is dropped first. */
  maxEntriesPerSession?: number;
  /** Clock for lock expiry, in ms since the epoch (tests inject one). */
  now?: () => number;
}

/** Cut lengths remembered per session: enough for many sticky cuts, bounded (ARCHITECTURE.md#compaction). */
export const MAX_CUTS_PER_SESSION = 32;
const DEFAULT_ENTRIES_PER_SESSION = 64;

interface SessionMemo {
  entries: LruMap<string, MemoEntry>;
  cuts: number[];
}

interface HeldLock {
  token: string;
  expiresAt: number;
}

/**
 * The memo of one process: a bounded LRU of sessions, each with a bounded LRU of entries and of cut lengths,
 * plus in-process locks with a TTL. It is the memo when no Redis is configured and the fallback the Redis
 * memo answers from while Redis is away.
 */
export class InMemoryMemoStore extends MemoStore {
  readonly kind = 'memory';
  readonly maxSessions: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly sessions: LruMap<string, SessionMemo>;
  private readonly usage: LruMap<string, UsageRecord>;
  private readonly locks = new Map<string, HeldLock>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly history: MinuteHistory;

  constructor(options: InMemoryMemoStoreOptions) {
    super();
    const maxEntries = options.maxEntriesPerSession ?? DEFAULT_ENTRIES_PER_SESSION;
    if (!Number.isInteger(options.maxSessions) || options.maxSessions < 1) {
      throw new MemoError(
        'MEMO_BAD_OPTION',
        `maxSessions must be a positive integer, got ${options.maxSessions}`,
      );
    }
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new MemoError(
        'MEMO_BAD_OPTION',
        `maxEntriesPerSession must be a positive integer, got ${maxEntries}`,
      );
    }
    this.maxSessions = options.maxSessions;
    this.history = new MinuteHistory(() => this.now());
    this.maxEntries = maxEntries;
    this.now = options.now ?? Date.now;
    this.sessions = new LruMap(options.maxSessions);
    this.usage = new LruMap(options.maxSessions);
  }

  async get(session: string, prefixHash: string): Promise<MemoEntry | undefined> {
    const entry = this.sessions.get(session)?.entries.get(prefixHash);
    // A copy, so that a caller editing what it got cannot change the memo behind it.
    return entry === undefined ? undefined : structuredClone(entry);
  }

  async put(session: string, entry: MemoEntry): Promise<void> {
    let memo = this.sessions.get(session);
    if (memo === undefined) {
      memo = { entries: new LruMap(this.maxEntries), cuts: [] };
      this.sessions.set(session, memo);
    }
    memo.entries.set(entry.prefixHash, structuredClone(entry));
    memo.cuts = [entry.cut, ...memo.cuts.filter((cut) => cut !== entry.cut)].slice(0, MAX_CUTS_PER_SESSION);
    this.wake(lockKey(session, entry.prefixHash));
  }

  async cuts(session: string): Promise<number[]> {
    return [...(this.sessions.peek(session)?.cuts ?? [])];
  }

  async lock(session: string, prefixHash: string, ttlMs: number): Promise<MemoLock | undefined> {
    const key = lockKey(session, prefixHash);
    if (this.heldLock(key) !== undefined) return undefined;
    this.sweepExpiredLocks();
    const token = randomUUID();
    this.locks.set(key, { token, expiresAt: this.now() + ttlMs });
    return {
      release: async () => {
        // Released by token: a holder whose lock expired and was taken by another cannot free the new one.
        if (this.locks.get(key)?.token !== token) return;
        this.locks.delete(key);
        this.wake(key);
      },
    };
  }

  async waitFor(session: string, prefixHash: string, timeoutMs: number): Promise<MemoEntry | undefined> {
    const key = lockKey(session, prefixHash);
    const found = await this.get(session, prefixHash);
    const held = this.heldLock(key);
    if (found !== undefined || held === undefined || timeoutMs <= 0) return found;
    await new Promise<void>((resolve) => {
      const waiters = this.waiters.get(key) ?? new Set<() => void>();
      this.waiters.set(key, waiters);
      const done = (): void => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0 && this.waiters.get(key) === waiters) this.waiters.delete(key);
        resolve();
      };
      // Wake at the timeout, or when the holder's lock expires without a put or a release. One ms past the expiry:
      // a timer may fire a little before Date.now() reaches its deadline (libuv caches the loop time), and a waiter
      // woken then still finds the lock held (seen as a flaky `npm test` under load).
      const timer = setTimeout(done, Math.max(0, Math.min(timeoutMs, held.expiresAt - this.now() + 1)));
      waiters.add(done);
    });
    return this.get(session, prefixHash);
  }

  async putUsage(record: UsageRecord): Promise<void> {
    this.usage.set(record.session, { ...record });
  }

  async getUsage(session?: string, owner?: string): Promise<UsageRecord | undefined> {
    if (session !== undefined) {
      const record = this.usage.peek(session);
      return record === undefined ? undefined : { ...record };
    }
    let latest: UsageRecord | undefined;
    for (const record of this.usage.newestFirst())
      if (owner === undefined || record.owner === owner) latest = newerUsage(latest, record);
    return latest === undefined ? undefined : { ...latest };
  }

  async recentUsage(limit: number, owner?: string): Promise<UsageRecord[]> {
    // Stable sort: records with the same `at` keep their put order, newest first.
    return this.usage
      .newestFirst()
      .filter((record) => owner === undefined || record.owner === owner)
      .sort((a, b) => usageTime(b) - usageTime(a))
      .slice(0, Math.max(0, limit))
      .map((record) => ({ ...record }));
  }

  async countCompaction(atMs: number, owner?: string): Promise<void> {
    this.history.add(atMs, owner);
  }

  async compactionHistory(fromMs: number, toMs: number, owner?: string): Promise<Map<number, number>> {
    return this.history.read(fromMs, toMs, owner);
  }

  async close(): Promise<void> {
    for (const key of [...this.waiters.keys()]) this.wake(key);
    this.sessions.clear();
    this.usage.clear();
    this.locks.clear();
  }

  private heldLock(key: string): HeldLock | undefined {
    const held = this.locks.get(key);
    if (held === undefined) return undefined;
    if (held.expiresAt > this.now()) return held;
    this.locks.delete(key);
    return undefined;
  }

  /** Locks normally go on release; this bounds the map when holders die without releasing. */
  private sweepExpiredLocks(): void {
    if (this.locks.size < this.maxSessions) return;
    const now = this.now();
    for (const [key, held] of this.locks) if (held.expiresAt <= now) this.locks.delete(key);
  }

  private wake(key: string): void {
    for (const done of [...(this.waiters.get(key) ?? [])]) done();
  }
}

function lockKey(session: string, prefixHash: string): string {
  return `${session}\u0000${prefixHash}`;
}
