// Redis dies under two live replicas and comes back (issue 7 §4, ARCHITECTURE.md#fail-open rules 1-2): every request is
// still answered, the outage is counted and logged once per replica, and Redis is used again on its own.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { startRedis, type TestRedis } from '../support/redis';
import { Conversation, forwardedCompactions } from './conversation';
import { getJson, metricTotal, scanKeys } from './probes';
import { WARN, assertBuilt, eventually, startReplica, type LogLine, type Replica } from './replica-process';

const SESSION = 'dev-bob/outage';
const PREFIX = 'guardian:';

/** Warnings about the memo's Redis among `lines`. */
function redisWarnings(lines: readonly LogLine[]): LogLine[] {
  return lines.filter((l) => l.level === WARN && /redis/i.test(JSON.stringify(l)));
}

describe('replicas while Redis is killed and restarted', () => {
  let redis: TestRedis;
  let stub: StubBackend;
  let dataDir: string;
  let replicas: Replica[] = [];

  beforeAll(async () => {
    assertBuilt();
    // Owned: this test kills it, which a shared REDIS_URL server must never be.
    redis = await startRedis({ owned: true });
    stub = await startStub({ window: 8192 });
    dataDir = await mkdtemp(join(tmpdir(), 'cg-outage-'));
    const env = {
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_REDIS_URL: redis.url,
      GUARDIAN_REDIS_PREFIX: PREFIX,
      GUARDIAN_RESERVE_OUTPUT: '1024',
      // Only the kill may cause an outage here, not a slow reply on a loaded CI machine.
      GUARDIAN_REDIS_TIMEOUT_MS: '60000',
    };
    replicas = await Promise.all([startReplica({ env }), startReplica({ env })]);
  });

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await stub?.close();
    await redis?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('answers every turn, counts and logs the outage once, and uses Redis again after the restart', async () => {
    const [a, b] = replicas as [Replica, Replica];
    const conversation = new Conversation({ session: SESSION, wordsPerTurn: 330 });
    const statuses: number[] = [];
    let turn = 0;
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++, turn++) statuses.push(await conversation.send((turn % 2 ? b : a).url));
    };

    await turns(6);
    expect(await scanKeys(redis.url, PREFIX)).not.toEqual([]);
    const logsBeforeKill = replicas.map((r) => r.logs.length);
    expect(replicas.map((r) => redisWarnings(r.logs))).toEqual([[], []]);

    await redis.kill();
    // Through the outage the conversation outgrows the window: compaction runs on the local memo.
    await turns(8);
    expect(forwardedCompactions(stub.requests).length).toBeGreaterThan(0);
    for (const replica of replicas) {
      expect(await metricTotal(replica.url, 'guardian_memo_errors_total')).toBeGreaterThan(0);
      const ready = await getJson(`${replica.url}/readyz`);
      expect(ready).toMatchObject({
        status: 200,
        body: { status: 'ready', memo_store: 'redis', redis: 'down' },
      });
    }

    await redis.restart();
    // Turns while the replicas are still reconnecting (their backoff is up to a second).
    await turns(2);
    for (const replica of replicas) {
      await eventually('the replica to reconnect', async () => {
        const ready = await getJson<{ redis: string }>(`${replica.url}/readyz`);
        return ready.body.redis === 'ready' ? true : undefined;
      });
    }
    await turns(4);
    expect(statuses).toEqual(Array.from({ length: turn }, () => 200));

    // One warning per replica for the whole outage, and one line saying Redis is back.
    replicas.forEach((replica, i) => {
      const since = replica.logs.slice(logsBeforeKill[i]);
      expect(redisWarnings(since)).toHaveLength(1);
      expect(since.filter((l) => l.msg.includes('memo redis is back'))).toHaveLength(1);
    });
    // The restarted (empty) Redis fills again from the turns after it came back, and both replicas read it.
    await eventually('usage in the restarted Redis', async () => {
      const keys = await scanKeys(redis.url, PREFIX);
      return keys.some((k) => k.startsWith(`${PREFIX}usage:`)) ? keys : undefined;
    });
    const last = stub.requests.filter((r) => r.route === 'chat' && !r.isSummary).at(-1);
    const usage = (r: Replica) =>
      getJson<{ used_after_compaction: number }>(
        `${r.url}/guardian/usage?session=${encodeURIComponent(SESSION)}`,
      );
    const fromA = await eventually('the last turn in /guardian/usage', async () => {
      const answer = await usage(a);
      return answer.body.used_after_compaction === last?.promptTokens ? answer : undefined;
    });
    expect(await usage(b)).toEqual(fromA);
  });
});
