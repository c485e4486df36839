import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
// The shared test helper lives outside the project; test/ has no @guardian alias (see the report).
import { startRedis, type TestRedis } from '../../../test/support/redis';
import { InMemoryMemoStore } from './in-memory-memo-store';
import type { MemoEntry, UsageRecord } from './memo-store';
import { RedisKeys } from './redis-keys';
import { RedisMemoStore } from './redis-memo-store';

function entry(prefixHash: string, cut: number, summary = `summary of ${prefixHash}`): MemoEntry {
  return {
    summary,
    mustKeep: ['keep me'],
    cut,
    from: 0,
    prefixHash,
    span: 'run-1/0001.json',
    spans: ['run-1/0001.json'],
    summaryTokens: 12,
    createdAt: '2025-01-01T00:00:00.000Z',
  };
}

function usage(session: string, at: string): UsageRecord {
  return {
    session,
    window: 32768,
    used_after_compaction: 2048,
    pct: 6.25,
    count_source: 'tokenize',
    model: 'qwen',
    last_compaction_at: null,
    at,
    // Another replica decides whether a request is a helper from this count (ADR 0010): it must survive Redis.
    tools: 11,
  };
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  // Waits for a state that must come; the 5-minute bound only ends a hang (the verdict must not depend on speed).
  for (const giveUp = Date.now() + 300_000; Date.now() < giveUp;) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe('RedisMemoStore against a real Redis', () => {
  let redis: TestRedis;
  let raw: Redis;
  let prefix: string;
  let errors: { op: string; err: Error }[];
  const stores: RedisMemoStore[] = [];

  // One store per "replica": each has its own local fallback, as two processes would.
  async function replica(options: { maxEntryBytes?: number } = {}): Promise<RedisMemoStore> {
    const store = new RedisMemoStore({
      url: redis.url,
      prefix,
      ttlSeconds: 600,
      commandTimeoutMs: 2000,
      fallback: new InMemoryMemoStore({ maxSessions: 16 }),
      onError: (op, err) => errors.push({ op, err }),
      ...options,
    });
    stores.push(store);
    expect(await store.connect()).toEqual({ ok: true });
    return store;
  }

  beforeAll(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url);
  });

  afterAll(async () => {
    raw.disconnect();
    await redis.stop();
  });

  beforeEach(() => {
    prefix = `test-${randomUUID().slice(0, 8)}:`;
    errors = [];
  });

  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
    // Leave a shared REDIS_URL server as it was found.
    const [, keys] = await raw.scan('0', 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await raw.del(...keys);
  });

  it('round-trips entries, cuts and usage through Redis', async () => {
    const a = await replica();
    expect(a.kind).toBe('redis');
    expect(a.status()).toBe('ready');
    await a.put('dev-alice', entry('p1', 10));
    await a.put('dev-alice', entry('p2', 24));
    await a.put('dev-alice', entry('p3', 10));
    const b = await replica();
    expect(await b.get('dev-alice', 'p2')).toEqual(entry('p2', 24));
    expect(await b.get('dev-alice', 'missing')).toBeUndefined();
    expect(await b.cuts('dev-alice')).toEqual([10, 24]);
    await a.putUsage(usage('dev-alice', '2025-01-01T00:00:01.000Z'));
    expect(await b.getUsage('dev-alice')).toEqual(usage('dev-alice', '2025-01-01T00:00:01.000Z'));
    expect(await b.getUsage('dev-nobody')).toBeUndefined();
    expect(errors).toEqual([]);
  });

  it('keeps every key under the prefix, with a TTL, and no raw session value in a key', async () => {
    const a = await replica();
    await a.put('dev-alice', entry('p1', 10));
    await a.putUsage(usage('dev-alice', '2025-01-01T00:00:01.000Z'));
    const held = await a.lock('dev-alice', 'p9', 60_000);
    const [, keys] = await raw.scan('0', 'MATCH', `${prefix}*`, 'COUNT', 1000);
    const hash = new RedisKeys(prefix).session('dev-alice');
    expect(keys.sort()).toEqual(
      [
        `${prefix}cuts:${hash}`,
        `${prefix}lock:${hash}:p9`,
        `${prefix}memo:${hash}:p1`,
        `${prefix}usage:${hash}`,
        `${prefix}usage:recent`,
      ].sort(),
    );
    for (const key of keys) {
      const ttl = await raw.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(600_000);
      expect(key).not.toContain('alice');
    }
    await held?.release();
  });

  it('gives a lock to one replica; only the token holder can release it', async () => {
    const a = await replica();
    const b = await replica();
    const first = await a.lock('s', 'p', 150);
    expect(first).toBeDefined();
    expect(await b.lock('s', 'p', 60_000)).toBeUndefined();
    const lockKey = new RedisKeys(prefix).lock('s', 'p');
    await until(async () => (await raw.exists(lockKey)) === 0, 'the first lock to expire');
    const second = await b.lock('s', 'p', 60_000);
    expect(second).toBeDefined();
    await first?.release(); // its lock expired and is now b's: this release must not free it
    expect(await a.lock('s', 'p', 60_000)).toBeUndefined();
    await second?.release();
    expect(await a.lock('s', 'p', 60_000)).toBeDefined();
    expect(errors).toEqual([]);
  });

  it('waitFor returns the entry another replica puts, and undefined when it releases without one', async () => {
    const a = await replica();
    const b = await replica();
    const held = await a.lock('s', 'p', 60_000);
    const waiting = b.waitFor('s', 'p', 30_000);
    await a.put('s', entry('p', 40));
    await held?.release();
    await expect(waiting).resolves.toEqual(entry('p', 40));

    const abandoned = await a.lock('s', 'q', 60_000);
    const waitingForNothing = b.waitFor('s', 'q', 30_000);
    await abandoned?.release();
    await expect(waitingForNothing).resolves.toBeUndefined();
  });

  it('waitFor gives up at its timeout and leaves the holder its lock', async () => {
    const a = await replica();
    const b = await replica();
    await a.lock('s', 'p', 60_000);
    await expect(b.waitFor('s', 'p', 100)).resolves.toBeUndefined();
    expect(await b.lock('s', 'p', 60_000)).toBeUndefined();
  });

  it('shares usage between replicas: latest and recent lists see both', async () => {
    const a = await replica();
    const b = await replica();
    await a.putUsage(usage('dev-alice', '2025-01-01T00:00:01.000Z'));
    await b.putUsage(usage('dev-bob', '2025-01-01T00:00:02.000Z'));
    expect((await a.getUsage())?.session).toBe('dev-bob');
    expect((await a.recentUsage(10)).map((r) => r.session)).toEqual(['dev-bob', 'dev-alice']);
    expect((await b.recentUsage(1)).map((r) => r.session)).toEqual(['dev-bob']);
    await a.putUsage(usage('dev-alice', '2025-01-01T00:00:03.000Z'));
    expect((await b.getUsage())?.session).toBe('dev-alice');
    expect(await b.recentUsage(0)).toEqual([]);
  });

  it('lists one owner’s usage across replicas, and never another’s (team mode)', async () => {
    const a = await replica();
    const b = await replica();
    const owned = (session: string, owner: string, at: string): UsageRecord => ({
      ...usage(session, at),
      owner,
    });
    await a.putUsage(owned('alice/laptop', 'a'.repeat(64), '2025-01-01T00:00:01.000Z'));
    await b.putUsage(owned('bob/laptop', 'b'.repeat(64), '2025-01-01T00:00:02.000Z'));
    await a.putUsage(usage('anonymous', '2025-01-01T00:00:03.000Z'));
    // A fresh replica answers from Redis alone.
    const c = await replica();
    expect((await c.getUsage(undefined, 'a'.repeat(64)))?.session).toBe('alice/laptop');
    expect((await c.recentUsage(10, 'b'.repeat(64))).map((r) => r.session)).toEqual(['bob/laptop']);
    expect((await c.recentUsage(10)).map((r) => r.session)).toEqual([
      'anonymous',
      'bob/laptop',
      'alice/laptop',
    ]);
    expect(await c.getUsage(undefined, 'c'.repeat(64))).toBeUndefined();
  });

  it('keeps an entry over maxEntryBytes local only, but shares its cut', async () => {
    const a = await replica({ maxEntryBytes: 1024 });
    const b = await replica({ maxEntryBytes: 1024 });
    const big = entry('big', 50, 'x'.repeat(2000));
    await a.put('s', big);
    expect(await a.get('s', 'big')).toEqual(big);
    expect(await b.get('s', 'big')).toBeUndefined();
    expect(await b.cuts('s')).toEqual([50]);
    expect(await raw.exists(new RedisKeys(prefix).memo('s', 'big'))).toBe(0);
  });

  it('starts connecting on its first op when connect() was never called', async () => {
    const a = await replica();
    await a.put('s', entry('p', 3));
    const lazy = new RedisMemoStore({
      url: redis.url,
      prefix,
      ttlSeconds: 600,
      commandTimeoutMs: 2000,
      fallback: new InMemoryMemoStore({ maxSessions: 4 }),
    });
    stores.push(lazy);
    await lazy.cuts('s'); // not connected yet: answered locally, and ioredis starts connecting (lazyConnect)
    await until(async () => (await lazy.get('s', 'p')) !== undefined, 'the lazy store to reach Redis');
    expect(lazy.status()).toBe('ready');
  });

  it('treats a stored entry it cannot parse as a miss and reports it', async () => {
    const a = await replica();
    await raw.set(new RedisKeys(prefix).memo('s', 'bad'), '{"summary": 1}', 'EX', 60);
    expect(await a.get('s', 'bad')).toBeUndefined();
    expect(errors.map((e) => [e.op, (e.err as { code?: string }).code])).toEqual([
      ['get', 'MEMO_ENTRY_INVALID'],
    ]);
    expect(a.status()).toBe('ready');
  });

  it("shares the per-minute compaction counts, per owner, with a TTL (the console's chart on every replica)", async () => {
    const [a, b] = [await replica(), await replica()];
    const noon = Date.parse('2026-12-04T12:00:00Z');
    await a.countCompaction(noon + 5_000, 'alice');
    await a.countCompaction(noon + 6_000);
    await b.countCompaction(noon + 65_000, 'bob');
    // Each replica sees both: b counted nothing in the first minute itself.
    for (const store of [a, b])
      expect([...(await store.compactionHistory(noon, noon + 120_000))]).toEqual([
        [noon, 2],
        [noon + 60_000, 1],
      ]);
    expect([...(await b.compactionHistory(noon, noon + 120_000, 'alice'))]).toEqual([[noon, 1]]);
    const key = new RedisKeys(prefix).history(noon);
    expect(await raw.hgetall(key)).toEqual({ alice: '1', '-': '1' });
    const ttl = await raw.ttl(key);
    expect(ttl).toBeGreaterThan(24 * 3600);
    expect(ttl).toBeLessThanOrEqual(24 * 3600 + 60);
    expect(errors).toEqual([]);
  });
});
