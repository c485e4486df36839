// A replica whose Redis URL is wrong (issue 7 §5): a bad password, a host where nothing listens. It still
// starts, says at startup what is wrong in words an operator can act on, and answers every request
// (ARCHITECTURE.md#fail-open rule 1); /readyz stays ready and reports Redis (ARCHITECTURE.md#fail-open rule 2).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { startRedis, type TestRedis } from '../support/redis';
import { Conversation, forwardedCompactions } from './conversation';
import { getJson } from './probes';
import { STARTUP, WARN, assertBuilt, closedPort, startReplica, type Replica } from './replica-process';

const RIGHT = 'right-horse-battery';
const WRONG = 'wrong-staple-7731';

describe('a replica with a Redis it cannot use', () => {
  let redis: TestRedis;
  let stub: StubBackend;
  let dataDir: string;
  const started: Replica[] = [];

  beforeAll(async () => {
    assertBuilt();
    redis = await startRedis({ password: RIGHT });
    stub = await startStub({ window: 8192 });
    dataDir = await mkdtemp(join(tmpdir(), 'cg-misconfigured-'));
  });

  afterAll(async () => {
    await Promise.all(started.map((r) => r.stop()));
    await stub?.close();
    await redis?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const start = async (redisUrl: string): Promise<Replica> => {
    const replica = await startReplica({
      env: {
        GUARDIAN_UPSTREAM_URL: stub.baseUrl,
        GUARDIAN_DATA_DIR: dataDir,
        GUARDIAN_REDIS_URL: redisUrl,
        GUARDIAN_RESERVE_OUTPUT: '1024',
      },
    });
    started.push(replica);
    return replica;
  };

  const cases = [
    {
      name: 'a wrong password',
      url: () => redis.url.replace(`:${RIGHT}@`, `:${WRONG}@`),
      cause: /password/i,
    },
    {
      name: 'a host where nothing listens',
      url: async () => `redis://127.0.0.1:${await closedPort()}`,
      cause: /refused/i,
    },
  ];

  it.each(cases)('starts with $name, warns clearly and answers every request', async (c) => {
    const url = await c.url();
    const replica = await start(url);
    // Before it says it is up, it says which Redis it cannot use and why, without the password.
    const target = new URL(url).host;
    const startupLine = replica.logs.findIndex((l) => STARTUP.test(l.msg));
    const warnings = replica.logs
      .slice(0, startupLine)
      .filter((l) => l.level === WARN)
      .map((l) => JSON.stringify(l));
    expect(warnings.some((w) => c.cause.test(w) && w.includes(target))).toBe(true);
    expect(JSON.stringify(replica.logs)).not.toContain(WRONG);

    const session = `dev-carol/${c.name}`;
    const conversation = new Conversation({ session, wordsPerTurn: 330 });
    const before = stub.requests.length;
    const statuses: number[] = [];
    for (let turn = 0; turn < 12; turn++) statuses.push(await conversation.send(replica.url));
    expect(statuses).toEqual(Array.from({ length: 12 }, () => 200));
    // The conversation was compacted on the local memo.
    expect(forwardedCompactions(stub.requests.slice(before)).length).toBeGreaterThan(0);

    const ready = await getJson(`${replica.url}/readyz`);
    expect(ready).toMatchObject({
      status: 200,
      body: { status: 'ready', memo_store: 'redis', redis: 'down' },
    });
  });
});
