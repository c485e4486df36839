import { join } from 'node:path';

import type { HistoryAnswer } from '@guardian/client';

import { readDailyLogs } from '@guardian/archive';
import { z } from 'zod';

import type { Stack } from '../support/stack';
import { startRedis, type TestRedis } from '../support/redis';
import { until } from '../support/wait';
import { compactOnce, openChromium, startWindowStack } from './support';

// Issue 31 item 1, "and in Redis when one is configured" (ADR 0027): two replicas with a data volume each and one
// Redis. Compactions go through replica A only; replica B's log holds none of them, yet its chart shows them all,
// because each compaction is also counted in its minute in Redis. Before this, B's page showed an empty chart.

const PREFIX = `guardian:shared-history-${process.pid}-${Date.now()}:`;
const COMPACTIONS = 6;

async function history(url: string): Promise<number> {
  const res = await fetch(`${url}/guardian/history?minutes=60`);
  expect(res.status).toBe(200);
  return ((await res.json()) as HistoryAnswer).buckets.reduce((n, b) => n + b.compactions, 0);
}

describe('the chart of a second replica, sharing only Redis', () => {
  let redis: TestRedis;
  let a: Stack;
  let b: Stack;
  let browser: Awaited<ReturnType<typeof openChromium>>;

  beforeAll(async () => {
    redis = await startRedis();
    // A hang guard per command only: a busy machine must not turn a slow reply into an outage here.
    const env = {
      GUARDIAN_REDIS_URL: redis.url,
      GUARDIAN_REDIS_PREFIX: PREFIX,
      GUARDIAN_REDIS_TIMEOUT_MS: '60000',
    };
    [a, b] = await Promise.all([startWindowStack(env), startWindowStack(env)]);
    browser = await openChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([a?.close(), b?.close()]);
    await redis?.stop();
  });

  it("shows replica A's compactions on replica B's page, which has none of them in its own log", async () => {
    for (let i = 1; i <= COMPACTIONS; i++) expect(await compactOnce(a, { tag: `shared-${i}` })).toBe(200);
    await until('A has logged every compaction', async () => (await history(a.guardian.url)) === COMPACTIONS);
    // B serves no request: its own volume has no compaction line.
    const own = await readDailyLogs(
      join(b.dataDir, 'log'),
      new Date(Date.now() - 3_600_000),
      z.looseObject({ ts: z.string() }),
    );
    expect(own.rows).toEqual([]);
    expect(await history(b.guardian.url)).toBe(COMPACTIONS);

    const page = await browser.context.newPage();
    await page.goto(`${b.guardian.url}/guardian/health`);
    await page
      .locator('#chart-total', { hasText: `${COMPACTIONS} compactions in the last 60 minutes.` })
      .waitFor();
    expect(await page.locator('#compactions-chart').getAttribute('data-total')).toBe(String(COMPACTIONS));
    await page.close();
    // A counts each once: its log and Redis agree, and the larger count per minute is not their sum.
    expect(await history(a.guardian.url)).toBe(COMPACTIONS);
  });
});
