import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { InMemoryMemoStore, MAX_CUTS_PER_SESSION } from './in-memory-memo-store';
import { decodeEntry, decodeUsage, newerUsage, usageTime } from './memo-codec';
import { MemoError } from './memo-error';
import { MemoStore, type MemoEntry, type MemoLock, type UsageRecord } from './memo-store';
import { mergeHistory } from './minute-history';
import { RedisConnection, type RedisConnectResult, type RedisMemoStatus } from './redis-connection';
import { countMinute, readMinutes } from './redis-history';
import { RedisKeys } from './redis-keys';
import { redisMemoOptionsSchema, type RedisMemoStoreOptions } from './redis-memo-options';
import { checkResults } from './redis-results';

// Releases a lock only for the holder whose token it still stores: a holder whose lock expired and was
// taken by another replica must not free the new holder's lock (the single-instance pattern of
// https://redis.io/docs/latest/develop/use/patterns/distributed-locks/).
const RELEASE_LOCK = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

// waitFor polls with a short backoff: quick to notice a summary, light on Redis during a long wait.
const POLL_START_MS = 25;
const POLL_MAX_MS = 100;

/**
 * The memo shared by every replica, in Redis. Every operation is fail-soft: when Redis is down, slow or
 * returns bad data, the operation answers from `fallback` (which every write also goes to), calls
 * `onError`, and the request goes on (ARCHITECTURE.md#fail-open rule 1).
 */
export class RedisMemoStore extends MemoStore {
  readonly kind = 'redis';
  private readonly connection: RedisConnection;
  private readonly keys: RedisKeys;
  private readonly fallback: InMemoryMemoStore;
  private readonly ttlSeconds: number;
  private readonly maxEntryBytes: number;

  constructor(private readonly options: RedisMemoStoreOptions) {
    super();
    const parsed = redisMemoOptionsSchema.safeParse(options);
    if (!parsed.success) {
      throw new MemoError('MEMO_BAD_OPTION', `bad Redis memo options: ${z.prettifyError(parsed.error)}`);
    }
    this.keys = new RedisKeys(parsed.data.prefix);
    this.fallback = options.fallback;
    this.ttlSeconds = parsed.data.ttlSeconds;
    this.maxEntryBytes = parsed.data.maxEntryBytes;
    this.connection = new RedisConnection({
      url: parsed.data.url,
      commandTimeoutMs: parsed.data.commandTimeoutMs,
      connectTimeoutMs: parsed.data.connectTimeoutMs,
      logger: options.logger,
    });
  }

  /** Connect once at start. Never throws: a failure is logged, reported here, and retried in the background. */
  connect(): Promise<RedisConnectResult> {
    return this.connection.connect();
  }

  status(): RedisMemoStatus {
    return this.connection.status();
  }

  async get(session: string, prefixHash: string): Promise<MemoEntry | undefined> {
    return this.attempt(
      'get',
      async () => {
        const raw = await this.redis.get(this.keys.memo(session, prefixHash));
        if (raw === null) return this.fallback.get(session, prefixHash);
        const entry = decodeEntry(raw);
        // Keep what this replica used warm locally, so it can go on from it during an outage.
        await this.fallback.put(session, entry);
        return entry;
      },
      () => this.fallback.get(session, prefixHash),
    );
  }

  async put(session: string, entry: MemoEntry): Promise<void> {
    await this.fallback.put(session, entry);
    const json = JSON.stringify(entry);
    const tooBig = Buffer.byteLength(json) > this.maxEntryBytes;
    const cutsKey = this.keys.cuts(session);
    await this.attempt(
      'put',
      async () => {
        const tx = this.redis.multi();
        // An oversized entry stays local (Redis is a shared cache, not a bulk store); its cut is still shared.
        if (!tooBig) tx.set(this.keys.memo(session, entry.prefixHash), json, 'EX', this.ttlSeconds);
        tx.lrem(cutsKey, 0, String(entry.cut))
          .lpush(cutsKey, String(entry.cut))
          .ltrim(cutsKey, 0, MAX_CUTS_PER_SESSION - 1)
          .expire(cutsKey, this.ttlSeconds);
        checkResults(await tx.exec());
      },
      async () => undefined,
    );
  }

  async cuts(session: string): Promise<number[]> {
    return this.attempt(
      'cuts',
      async () => {
        const shared = (await this.redis.lrange(this.keys.cuts(session), 0, MAX_CUTS_PER_SESSION - 1))
          .map(Number)
          .filter((cut) => Number.isInteger(cut) && cut >= 0);
        // Cuts stored locally while Redis was away (or before it restarted empty) still count, after the shared ones.
        const local = await this.fallback.cuts(session);
        return [...new Set([...shared, ...local])].slice(0, MAX_CUTS_PER_SESSION);
      },
      () => this.fallback.cuts(session),
    );
  }

  async lock(session: string, prefixHash: string, ttlMs: number): Promise<MemoLock | undefined> {
    const key = this.keys.lock(session, prefixHash);
    const token = randomUUID();
    return this.attempt(
      'lock',
      async () => {
        const taken = await this.redis.set(key, token, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX');
        if (taken !== 'OK') return undefined;
        return { release: () => this.release(key, token) };
      },
      () => this.fallback.lock(session, prefixHash, ttlMs),
    );
  }

  async waitFor(session: string, prefixHash: string, timeoutMs: number): Promise<MemoEntry | undefined> {
    const deadline = Date.now() + Math.max(0, timeoutMs);
    const lockKey = this.keys.lock(session, prefixHash);
    const memoKey = this.keys.memo(session, prefixHash);
    let delay = POLL_START_MS;
    for (;;) {
      const polled = await this.attempt(
        'waitFor',
        async () => {
          // EXISTS before GET, in one pipeline: a holder puts before it releases, so a lock seen gone
          // means the GET that follows already sees its entry.
          const results = checkResults(await this.redis.pipeline().exists(lockKey).get(memoKey).exec());
          const [locked, raw] = [results[0], results[1]];
          if (typeof raw === 'string') return { done: true, entry: decodeEntry(raw) };
          return { done: locked === 0, entry: undefined };
        },
        async () => undefined,
      );
      const remaining = deadline - Date.now();
      // Redis failed mid-wait: the local memo decides for the rest of the wait.
      if (polled === undefined) return this.fallback.waitFor(session, prefixHash, remaining);
      if (polled.entry !== undefined) {
        await this.fallback.put(session, polled.entry);
        return polled.entry;
      }
      if (polled.done || remaining <= 0) return this.fallback.get(session, prefixHash);
      await sleep(Math.min(delay, remaining));
      delay = Math.min(delay * 2, POLL_MAX_MS);
    }
  }

  async putUsage(record: UsageRecord): Promise<void> {
    await this.fallback.putUsage(record);
    const sessionHash = this.keys.session(record.session);
    const recentKeys = [this.keys.recentUsage()];
    if (record.owner !== undefined) recentKeys.push(this.keys.recentUsage(record.owner));
    await this.attempt(
      'putUsage',
      async () => {
        const tx = this.redis
          .multi()
          .set(this.keys.usageByHash(sessionHash), JSON.stringify(record), 'EX', this.ttlSeconds);
        for (const recentKey of recentKeys)
          tx.zadd(recentKey, usageTime(record) || Date.now(), sessionHash)
            // Bounded like the in-process LRU: only the newest GUARDIAN_MAX_SESSIONS sessions are listed.
            .zremrangebyrank(recentKey, 0, -(this.fallback.maxSessions + 1))
            .expire(recentKey, this.ttlSeconds);
        checkResults(await tx.exec());
      },
      async () => undefined,
    );
  }

  async getUsage(session?: string, owner?: string): Promise<UsageRecord | undefined> {
    const local = await this.fallback.getUsage(session, owner);
    return this.attempt(
      'getUsage',
      async () => {
        let key: string | undefined;
        if (session !== undefined) key = this.keys.usage(session);
        else {
          const [newest] = await this.redis.zrevrange(this.keys.recentUsage(owner), 0, 0);
          key = newest === undefined ? undefined : this.keys.usageByHash(newest);
        }
        const raw = key === undefined ? null : await this.redis.get(key);
        // A write that missed Redis during an outage may be newer than what Redis holds.
        return newerUsage(raw === null ? undefined : decodeUsage(raw), local);
      },
      async () => local,
    );
  }

  async recentUsage(limit: number, owner?: string): Promise<UsageRecord[]> {
    const count = Math.max(0, Math.floor(limit));
    const local = await this.fallback.recentUsage(count, owner);
    if (count === 0) return [];
    return this.attempt(
      'recentUsage',
      async () => {
        const hashes = await this.redis.zrevrange(this.keys.recentUsage(owner), 0, count - 1);
        const raws =
          hashes.length === 0 ? [] : await this.redis.mget(hashes.map((h) => this.keys.usageByHash(h)));
        const bySession = new Map<string, UsageRecord>();
        for (const raw of raws) {
          if (raw === null) continue; // expired between ZREVRANGE and MGET: nothing to list
          const record = decodeUsage(raw);
          bySession.set(record.session, record);
        }
        for (const record of local) {
          bySession.set(record.session, newerUsage(bySession.get(record.session), record) ?? record);
        }
        return [...bySession.values()].sort((a, b) => usageTime(b) - usageTime(a)).slice(0, count);
      },
      async () => local,
    );
  }

  async countCompaction(atMs: number, owner?: string): Promise<void> {
    await this.fallback.countCompaction(atMs, owner);
    await this.attempt(
      'countCompaction',
      () => countMinute(this.redis, this.keys, atMs, owner),
      async () => undefined,
    );
  }

  /** Every replica's count, per minute, or at least this replica's own where Redis missed some (an outage). */
  async compactionHistory(fromMs: number, toMs: number, owner?: string): Promise<Map<number, number>> {
    const local = await this.fallback.compactionHistory(fromMs, toMs, owner);
    return this.attempt(
      'compactionHistory',
      async () => mergeHistory(await readMinutes(this.redis, this.keys, { fromMs, toMs, owner }), local),
      async () => local,
    );
  }

  async close(): Promise<void> {
    await this.connection.close();
    await this.fallback.close();
  }

  private get redis(): RedisConnection['client'] {
    return this.connection.client;
  }

  private async release(key: string, token: string): Promise<void> {
    // A failed release is harmless: the lock expires by its TTL and waiters then go on (ARCHITECTURE.md#fail-open
    // rule 4).
    await this.attempt(
      'unlock',
      async () => {
        await this.redis.eval(RELEASE_LOCK, 1, key, token);
      },
      async () => undefined,
    );
  }

  /** Run `op` against Redis; on any failure report it and answer from the local memo instead. */
  private async attempt<T>(
    op: string,
    viaRedis: () => Promise<T>,
    viaFallback: () => Promise<T>,
  ): Promise<T> {
    try {
      const value = await viaRedis();
      this.connection.succeeded();
      return value;
    } catch (err) {
      // Fail-open (ARCHITECTURE.md#fail-open rule 1): the memo is a cache, so the local answer is always a safe one.
      const error = this.connection.describe(err);
      this.connection.failed(op, error);
      this.report(op, error);
      return viaFallback();
    }
  }

  private report(op: string, error: MemoError): void {
    try {
      this.options.onError?.(op, error);
    } catch (err) {
      // A failing metrics callback must not turn a memo miss into a failed request (ARCHITECTURE.md#fail-open rule 1).
      this.options.logger?.warn({ op, err }, 'memo onError callback threw; ignored');
    }
  }
}
