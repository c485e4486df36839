// Two sidecar replicas behind one Service, sharing one Redis and one span volume (issue 7 §2, §3, §5):
// one developer's session alternates between them and is summarised once per stretch, not once per pod.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { startRedis, type TestRedis } from '../support/redis';
import { Conversation, forwardedCompactions, stretchesSeen, summariserCalls } from './conversation';
import { getJson, readKeys, scanKeys } from './probes';
import { STARTUP, assertBuilt, eventually, startReplica, type Replica } from './replica-process';

const SESSION = 'dev-alice/replicas';
const TURNS = 30;
// Under guardian:, and unique to this run: REDIS_URL may name a Redis that other runs share.
const PREFIX = `guardian:replicas-${process.pid}-${Date.now()}:`;

describe('two replicas sharing one Redis', () => {
  let redis: TestRedis;
  let stub: StubBackend;
  let dataDir: string;
  let replicas: Replica[] = [];

  beforeAll(async () => {
    assertBuilt();
    redis = await startRedis();
    // A little upstream latency, as a real summariser has (far more): a replica that finds another's lock
    // on a stretch is then certainly still waiting when the summary lands.
    stub = await startStub({ window: 8192, latencyMs: 40 });
    dataDir = await mkdtemp(join(tmpdir(), 'cg-replicas-'));
    const env = {
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_REDIS_URL: redis.url,
      GUARDIAN_REDIS_PREFIX: PREFIX,
      GUARDIAN_MEMO_TTL: '600',
      GUARDIAN_RESERVE_OUTPUT: '1024',
      // Half the room kept verbatim: each stretch then fits one summariser call even before calibration,
      // so one call per stretch is the whole expectation (ARCHITECTURE.md#compaction "Stretch").
      GUARDIAN_KEEP_RECENT_FRACTION: '0.5',
      // A hang guard per command: a busy machine must not turn a slow reply into an outage here (the outage test is
      // redis-outage.e2e-spec.ts).
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

  it('summarises each stretch once, shares the memo in Redis and answers usage the same from both', async () => {
    const [a, b] = replicas as [Replica, Replica];
    const conversation = new Conversation({ session: SESSION, wordsPerTurn: 330 });
    const statuses: number[] = [];
    for (let turn = 0; turn < TURNS; turn++) {
      statuses.push(await conversation.send((turn % 2 === 0 ? a : b).url));
    }
    expect(statuses).toEqual(Array.from({ length: TURNS }, () => 200));

    // The conversation outgrew the window several times, and compacted turns landed on both replicas.
    const compacted = forwardedCompactions(stub.requests);
    const stretches = stretchesSeen(stub.requests);
    expect(stretches).toBeGreaterThanOrEqual(2);
    expect(compacted.length).toBeGreaterThan(stretches);
    // The cut is sticky across pods: it only moves forward, and each cut that lasted more than one turn
    // was forwarded by both replicas (even turns went to a, odd turns to b), so each reused the other's.
    const cuts = compacted.map((c) => c.evicted);
    expect(cuts).toEqual([...cuts].sort((x, y) => x - y));
    for (const cut of new Set(cuts)) {
      const turns = compacted.filter((c) => c.evicted === cut).map((c) => c.turn);
      if (turns.length > 1) expect(new Set(turns.map((t) => t % 2)).size).toBe(2);
    }
    // No stretch was too big for one summariser call, so one call per stretch is the whole expectation.
    for (const replica of replicas) {
      const stats = await getJson<{ summaries_chunked: number; memo_store: string }>(
        `${replica.url}/guardian/stats`,
      );
      expect(stats.body).toMatchObject({ summaries_chunked: 0 });
    }
    expect(summariserCalls(stub.requests)).toBe(stretches);

    // One memo entry per stretch in Redis, each holding the summary the upstream was sent, with a TTL.
    const keys = await scanKeys(redis.url, PREFIX);
    expect(keys.every((k) => !k.includes(SESSION) && !k.includes('alice'))).toBe(true);
    const memoKeys = keys.filter((k) => k.startsWith(`${PREFIX}memo:`));
    expect(memoKeys).toHaveLength(stretches);
    const blocks = compacted.map((c) => c.block);
    for (const { value, ttl } of await readKeys(redis.url, memoKeys)) {
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(600);
      const entry = JSON.parse(value ?? '{}') as { summary?: string; prefixHash?: string; spans?: string[] };
      expect(entry.prefixHash).toMatch(/\S/);
      expect(entry.spans?.length).toBeGreaterThan(0);
      expect(blocks.some((block) => block.includes(entry.summary?.trim() ?? '(no summary)'))).toBe(true);
    }
    expect(keys.some((k) => k.startsWith(`${PREFIX}cuts:`))).toBe(true);

    // Usage is written after the answer ends: wait until a replica reports the last forwarded prompt, then
    // both must answer the same.
    const last = stub.requests.filter((r) => r.route === 'chat' && !r.isSummary).at(-1);
    const usage = (r: Replica) =>
      getJson<{ used_after_compaction: number }>(
        `${r.url}/guardian/usage?session=${encodeURIComponent(SESSION)}`,
      );
    const fromB = await eventually('the last turn in /guardian/usage', async () => {
      const answer = await usage(b);
      return answer.body.used_after_compaction === last?.promptTokens ? answer : undefined;
    });
    const fromA = await usage(a);
    expect(fromB.status).toBe(200);
    expect(fromA).toEqual(fromB);
    expect(fromA.body).toMatchObject({ window: 8192, model: 'stub-model' });
  });

  it('summarises a stretch once when the same turn reaches both replicas at once', async () => {
    const [a, b] = replicas as [Replica, Replica];
    // A resumed session: its first request is already over the budget (a client retrying on another pod,
    // or a Service that sent two sub-agents' identical turns to two pods).
    const conversation = new Conversation({ session: 'dev-dave/burst', wordsPerTurn: 330 }).grow(12);
    conversation.messages.push({ role: 'user', content: 'And now the next step, please.' });
    const from = stub.requests.length;
    const answers = await Promise.all([conversation.post(a.url), conversation.post(b.url)]);
    expect(answers.map((x) => x.status)).toEqual([200, 200]);

    const seen = stub.requests.slice(from);
    const compacted = forwardedCompactions(seen);
    expect(compacted).toHaveLength(2);
    expect(compacted[0]?.block).toBe(compacted[1]?.block);
    expect(stretchesSeen(seen)).toBe(1);
    expect(summariserCalls(seen)).toBe(1);
  });

  it('names in its startup line the dashboard on the port it listens on', () => {
    for (const replica of replicas) {
      const startup = replica.logs.find((l) => STARTUP.test(l.msg));
      expect(startup?.dashboard).toBe(`${replica.url}/guardian/health`);
    }
  });
});
