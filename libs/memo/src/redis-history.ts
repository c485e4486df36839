import type { RedisConnection } from './redis-connection';
import type { RedisKeys } from './redis-keys';
import { checkResults } from './redis-results';
import { HISTORY_KEEP_MS, MINUTE_MS, NO_OWNER, minuteOf } from './minute-history';

type Client = RedisConnection['client'];

/**
 * The console's per-minute compaction counts in Redis (ADR 0027): one hash per minute, a field per owner hash, kept a
 * day and a minute (the chart reads at most 1440 minutes back). HINCRBY is atomic, so every replica adds to the same
 * count and none overwrites another's.
 */
export async function countMinute(
  redis: Client,
  keys: RedisKeys,
  atMs: number,
  owner?: string,
): Promise<void> {
  const key = keys.history(minuteOf(atMs));
  const ttl = Math.ceil(HISTORY_KEEP_MS / 1000);
  checkResults(
    await redis
      .multi()
      .hincrby(key, owner ?? NO_OWNER, 1)
      .expire(key, ttl)
      .exec(),
  );
}

/** Compactions per minute from `fromMs` to `toMs` in one pipeline: one owner's field, or every field summed. */
export async function readMinutes(
  redis: Client,
  keys: RedisKeys,
  range: { fromMs: number; toMs: number; owner?: string },
): Promise<Map<number, number>> {
  const minutes: number[] = [];
  for (let m = minuteOf(range.fromMs); m <= range.toMs; m += MINUTE_MS) minutes.push(m);
  const pipe = redis.pipeline();
  for (const m of minutes) {
    if (range.owner === undefined) pipe.hvals(keys.history(m));
    else pipe.hget(keys.history(m), range.owner);
  }
  const results = checkResults(await pipe.exec());
  const out = new Map<number, number>();
  results.forEach((r, i) => {
    const values: unknown[] = Array.isArray(r) ? r : [r];
    const n = values.reduce<number>((sum, v) => sum + (Number(v) || 0), 0);
    const minute = minutes[i];
    if (n > 0 && minute !== undefined) out.set(minute, n);
  });
  return out;
}
