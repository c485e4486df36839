import { InMemoryMemoStore } from './in-memory-memo-store';
import type { MemoEntry, UsageRecord } from './memo-store';

function entry(prefixHash: string, cut: number, summary = `summary of ${prefixHash}`): MemoEntry {
  return {
    summary,
    mustKeep: [],
    cut,
    prefixHash,
    spans: [],
    summaryTokens: 10,
    createdAt: '2025-01-01T00:00:00.000Z',
  };
}

function usage(session: string, at: string): UsageRecord {
  return {
    session,
    window: 32768,
    used_after_compaction: 1000,
    pct: 3,
    count_source: 'estimate',
    model: 'm',
    last_compaction_at: null,
    at,
  };
}

describe('InMemoryMemoStore', () => {
  it('round-trips an entry and lists cuts most recent first, without duplicates', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 4 });
    await store.put('s', entry('a', 10));
    await store.put('s', entry('b', 20));
    await store.put('s', entry('c', 10));
    expect(await store.get('s', 'a')).toEqual(entry('a', 10));
    expect(await store.get('s', 'zzz')).toBeUndefined();
    expect(await store.get('other', 'a')).toBeUndefined();
    expect(await store.cuts('s')).toEqual([10, 20]);
    expect(await store.cuts('unknown')).toEqual([]);
  });

  it('returns copies, so a caller cannot change what is stored', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 4 });
    const original = entry('a', 1);
    await store.put('s', original);
    original.mustKeep.push('changed after put');
    const got = await store.get('s', 'a');
    got?.spans.push('changed after get');
    expect(await store.get('s', 'a')).toEqual(entry('a', 1));
  });

  it('keeps at most maxSessions sessions, dropping the least recently used', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 2 });
    await store.put('s1', entry('a', 1));
    await store.put('s2', entry('a', 2));
    await store.get('s1', 'a'); // s1 is now the most recently used
    await store.put('s3', entry('a', 3));
    expect(await store.get('s1', 'a')).toBeDefined();
    expect(await store.get('s2', 'a')).toBeUndefined();
    expect(await store.get('s3', 'a')).toBeDefined();
  });

  it('bounds entries per session and cut lengths per session', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 2, maxEntriesPerSession: 3 });
    for (let i = 0; i < 40; i += 1) await store.put('s', entry(`p${i}`, i));
    expect(await store.get('s', 'p0')).toBeUndefined();
    expect(await store.get('s', 'p39')).toBeDefined();
    const cuts = await store.cuts('s');
    expect(cuts).toHaveLength(32);
    expect(cuts[0]).toBe(39);
  });

  it('gives a lock to one holder at a time; only the holder releases it', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 2 });
    const first = await store.lock('s', 'p', 10_000);
    expect(first).toBeDefined();
    expect(await store.lock('s', 'p', 10_000)).toBeUndefined();
    expect(await store.lock('s', 'other', 10_000)).toBeDefined();
    await first?.release();
    const second = await store.lock('s', 'p', 10_000);
    expect(second).toBeDefined();
    await first?.release(); // a stale holder releasing again must not free the new holder's lock
    expect(await store.lock('s', 'p', 10_000)).toBeUndefined();
  });

  it('lets a lock expire after its TTL', async () => {
    let now = 1_000;
    const store = new InMemoryMemoStore({ maxSessions: 2, now: () => now });
    expect(await store.lock('s', 'p', 500)).toBeDefined();
    now += 499;
    expect(await store.lock('s', 'p', 500)).toBeUndefined();
    now += 1;
    expect(await store.lock('s', 'p', 500)).toBeDefined();
  });

  it('waitFor answers at once when the entry exists or nobody holds the lock', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 2 });
    expect(await store.waitFor('s', 'p', 60_000)).toBeUndefined();
    await store.put('s', entry('p', 5));
    expect(await store.waitFor('s', 'p', 60_000)).toEqual(entry('p', 5));
  });

  it('waitFor resolves with the entry the lock holder puts', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 2 });
    const held = await store.lock('s', 'p', 60_000);
    const waiting = store.waitFor('s', 'p', 60_000);
    await store.put('s', entry('p', 7));
    await held?.release();
    await expect(waiting).resolves.toEqual(entry('p', 7));
  });

  it('waitFor resolves with undefined when the holder releases without a summary', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 2 });
    const held = await store.lock('s', 'p', 60_000);
    const waiting = store.waitFor('s', 'p', 60_000);
    await held?.release();
    await expect(waiting).resolves.toBeUndefined();
  });

  it('waitFor gives up at its timeout while the lock is still held', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 2 });
    await store.lock('s', 'p', 60_000);
    await expect(store.waitFor('s', 'p', 20)).resolves.toBeUndefined();
    // the lock is still held: the waiter gave up, it did not take over
    expect(await store.lock('s', 'p', 60_000)).toBeUndefined();
  });

  it('waitFor wakes when the holder lock expires', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 2 });
    await store.lock('s', 'p', 20);
    await expect(store.waitFor('s', 'p', 60_000)).resolves.toBeUndefined();
    expect(await store.lock('s', 'p', 60_000)).toBeDefined();
  });

  it('reports usage per session, the most recent without a session, and a bounded recent list', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 3 });
    expect(await store.getUsage()).toBeUndefined();
    await store.putUsage(usage('a', '2025-01-01T00:00:01.000Z'));
    await store.putUsage(usage('b', '2025-01-01T00:00:03.000Z'));
    await store.putUsage(usage('c', '2025-01-01T00:00:02.000Z'));
    await store.putUsage(usage('a', '2025-01-01T00:00:04.000Z'));
    expect((await store.getUsage('b'))?.at).toBe('2025-01-01T00:00:03.000Z');
    expect(await store.getUsage('nobody')).toBeUndefined();
    expect((await store.getUsage())?.session).toBe('a');
    expect((await store.recentUsage(10)).map((r) => r.session)).toEqual(['a', 'b', 'c']);
    expect((await store.recentUsage(2)).map((r) => r.session)).toEqual(['a', 'b']);
    // b is the session written least recently, so the fourth session drops it.
    await store.putUsage(usage('d', '2025-01-01T00:00:05.000Z'));
    expect((await store.recentUsage(10)).map((r) => r.session)).toEqual(['d', 'a', 'c']);
  });

  it('close wakes every waiter', async () => {
    const store = new InMemoryMemoStore({ maxSessions: 2 });
    await store.lock('s', 'p', 60_000);
    const waiting = store.waitFor('s', 'p', 60_000);
    await store.close();
    await expect(waiting).resolves.toBeUndefined();
  });

  it('refuses a non-positive bound', () => {
    expect(() => new InMemoryMemoStore({ maxSessions: 0 })).toThrow(
      expect.objectContaining({ code: 'MEMO_BAD_OPTION' }),
    );
  });

  it('counts compactions per minute and owner, and forgets minutes over a day old', async () => {
    let now = Date.parse('2026-12-04T12:00:30Z');
    const store = new InMemoryMemoStore({ maxSessions: 4, now: () => now });
    const noon = Date.parse('2026-12-04T12:00:00Z');
    await store.countCompaction(noon + 1_000, 'alice');
    await store.countCompaction(noon + 59_000, 'alice');
    await store.countCompaction(noon + 61_000, 'bob');
    await store.countCompaction(noon + 62_000);
    const all = await store.compactionHistory(noon, noon + 120_000);
    expect([...all]).toEqual([
      [noon, 2],
      [noon + 60_000, 2],
    ]);
    expect([...(await store.compactionHistory(noon, noon + 120_000, 'bob'))]).toEqual([[noon + 60_000, 1]]);
    // A day and three minutes later, the first minutes are gone once the next compaction is counted.
    now = noon + 24 * 3_600_000 + 180_000;
    await store.countCompaction(now, 'alice');
    expect([...(await store.compactionHistory(noon, now))]).toEqual([[now - (now % 60_000), 1]]);
  });
});
