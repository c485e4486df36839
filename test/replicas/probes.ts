// What an operator or a load balancer reads from a replica: /readyz, /metrics, /guardian/usage.
import Redis from 'ioredis';

export interface Answer<T = unknown> {
  status: number;
  body: T;
}

export async function getJson<T = Record<string, unknown>>(url: string): Promise<Answer<T>> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as T };
}

/** Sum of every sample of a counter in Prometheus text format (all label sets). */
export async function metricTotal(replicaUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${replicaUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** Every key under `prefix`, by SCAN (never KEYS, which blocks a shared Redis). */
export async function scanKeys(redisUrl: string, prefix: string): Promise<string[]> {
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await client.connect();
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 100);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
    return keys.sort();
  } finally {
    client.disconnect();
  }
}

/** GET and TTL of each key, in one round trip. */
export async function readKeys(
  redisUrl: string,
  keys: readonly string[],
): Promise<{ key: string; value: string | null; ttl: number }[]> {
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await client.connect();
    const pipeline = client.pipeline();
    for (const key of keys) pipeline.get(key).ttl(key);
    const results = (await pipeline.exec()) ?? [];
    return keys.map((key, i) => ({
      key,
      value: (results[2 * i]?.[1] as string | null | undefined) ?? null,
      ttl: Number(results[2 * i + 1]?.[1] ?? -2),
    }));
  } finally {
    client.disconnect();
  }
}
