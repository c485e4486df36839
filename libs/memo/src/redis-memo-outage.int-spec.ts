import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
// The shared test helper lives outside the project; test/ has no @guardian alias (see the report).
import { startRedis, type TestRedis } from '../../../test/support/redis';
import { InMemoryMemoStore } from './in-memory-memo-store';
import type { MemoEntry, UsageRecord } from './memo-store';
import type { RedisMemoStoreOptions } from './redis-memo-options';
import { RedisMemoStore } from './redis-memo-store';

const entry = (prefixHash: string, cut: number): MemoEntry => ({
  summary: `summary of ${prefixHash}`,
  mustKeep: [],
  cut,
  prefixHash,
  spans: [],
  summaryTokens: 5,
  createdAt: '2025-01-01T00:00:00.000Z',
});

const usage = (session: string, at: string): UsageRecord => ({
  session,
  window: 8192,
  used_after_compaction: 4000,
  pct: 48.8,
  count_source: 'estimate',
  model: 'm',
  last_compaction_at: null,
  at,
});

/** Records what the memo logs and reports, the way the sidecar's logger and error counter see it. */
class Recorder {
  readonly warns: { obj: object; msg: string }[] = [];
  readonly infos: { obj: object; msg: string }[] = [];
  readonly errors: { op: string; code: unknown }[] = [];
  readonly logger = {
    warn: (obj: object, msg: string) => this.warns.push({ obj, msg }),
    info: (obj: object, msg: string) => this.infos.push({ obj, msg }),
  };
  readonly onError = (op: string, err: Error): void => {
    this.errors.push({ op, code: (err as { code?: unknown }).code });
  };
}

// Answers within a generous bound or fails: a memo op must never hold a request while Redis is away.
// This is a hang check, not a timing measurement (those live in bench/).
async function answers<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    // Far beyond the store's own timeouts (at most 2 s), so only a hang, never a slow machine, reaches it.
    timer = setTimeout(() => reject(new Error('memo op did not answer within 120 s: a hang')), 120_000);
  });
  try {
    return await Promise.race([promise, hung]);
  } finally {
    clearTimeout(timer);
  }
}

async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  // Waits for a state that must come; the 5-minute bound only ends a hang (the verdict must not depend on speed).
  for (const giveUp = Date.now() + 300_000; Date.now() < giveUp;) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe('RedisMemoStore when Redis fails', () => {
  const stores: RedisMemoStore[] = [];
  let recorder: Recorder;

  function store(url: string, options: Partial<RedisMemoStoreOptions> = {}): RedisMemoStore {
    const created = new RedisMemoStore({
      url,
      prefix: `outage-${randomUUID().slice(0, 8)}:`,
      ttlSeconds: 600,
      commandTimeoutMs: 2000,
      connectTimeoutMs: 1000,
      fallback: new InMemoryMemoStore({ maxSessions: 16 }),
      onError: recorder.onError,
      logger: recorder.logger,
      ...options,
    });
    stores.push(created);
    return created;
  }

  beforeEach(() => {
    recorder = new Recorder();
  });

  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  describe('with a Redis this test owns', () => {
    let redis: TestRedis;

    beforeAll(async () => {
      redis = await startRedis({ owned: true });
    });

    afterAll(async () => {
      await redis.stop();
    });

    it('answers every op from the local memo while Redis is killed, warns once, and goes back on its own', async () => {
      const prefix = `kill-${randomUUID().slice(0, 8)}:`;
      const memo = store(redis.url, { prefix });
      expect(await memo.connect()).toEqual({ ok: true });
      await memo.put('s', entry('before', 10));
      await redis.kill();

      await answers(memo.put('s', entry('during', 20)));
      expect(await answers(memo.get('s', 'before'))).toEqual(entry('before', 10));
      expect(await answers(memo.get('s', 'during'))).toEqual(entry('during', 20));
      expect(await answers(memo.cuts('s'))).toEqual([20, 10]);
      const held = await answers(memo.lock('s', 'p', 60_000));
      expect(held).toBeDefined();
      expect(await answers(memo.lock('s', 'p', 60_000))).toBeUndefined();
      expect(await answers(memo.waitFor('s', 'p', 50))).toBeUndefined();
      await held?.release();
      await answers(memo.putUsage(usage('s', '2025-01-01T00:00:01.000Z')));
      expect((await answers(memo.getUsage('s')))?.pct).toBe(48.8);
      expect((await answers(memo.getUsage()))?.session).toBe('s');
      expect((await answers(memo.recentUsage(5))).map((r) => r.session)).toEqual(['s']);

      expect(memo.status()).toBe('down');
      const failedOps = new Set(recorder.errors.map((e) => e.op));
      for (const op of ['put', 'get', 'cuts', 'lock', 'waitFor', 'putUsage', 'getUsage', 'recentUsage']) {
        expect(failedOps).toContain(op);
      }
      expect(new Set(recorder.errors.map((e) => e.code))).toEqual(new Set(['MEMO_REDIS_UNAVAILABLE']));
      // Reconnect attempts go on in the background; they must not add warnings.
      await until(() => recorder.errors.length > 0, 'errors');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(recorder.warns).toHaveLength(1);
      expect(recorder.warns[0]?.msg).toMatch(/unavailable/);

      await redis.restart();
      await until(() => memo.status() === 'ready', 'the memo to reconnect');
      expect(recorder.infos.map((i) => i.msg)).toContain('memo redis is back; using it again');
      // Back on Redis: another replica sees what this one writes now.
      await memo.put('s', entry('after', 30));
      const other = store(redis.url, { prefix });
      expect(await other.connect()).toEqual({ ok: true });
      expect(await other.get('s', 'after')).toEqual(entry('after', 30));
      expect(recorder.warns).toHaveLength(1);
    });

    it('falls back when a live Redis is too slow, then uses it again', async () => {
      const prefix = `slow-${randomUUID().slice(0, 8)}:`;
      const writer = store(redis.url, { prefix });
      const slowReader = store(redis.url, { prefix, commandTimeoutMs: 50 });
      expect(await writer.connect()).toEqual({ ok: true });
      expect(await slowReader.connect()).toEqual({ ok: true });
      await writer.put('s', entry('p', 1));

      // Redis is frozen until the three reads are done (not for a fixed time, which a busy machine could outlast
      // between them), so each read outlasts the reader's 50 ms. One slow command is a hiccup (counted, answered
      // locally, no outage); three in a row are an outage.
      await redis.pause();
      try {
        expect(await answers(slowReader.get('s', 'p'))).toBeUndefined();
        expect(recorder.errors).toContainEqual({ op: 'get', code: 'MEMO_REDIS_TIMEOUT' });
        expect(slowReader.status()).toBe('ready');
        expect(recorder.warns).toHaveLength(0);
        expect(await answers(slowReader.get('s', 'p'))).toBeUndefined();
        expect(await answers(slowReader.get('s', 'p'))).toBeUndefined();
        expect(slowReader.status()).toBe('down');
      } finally {
        await redis.resume();
      }
      await until(async () => (await slowReader.get('s', 'p')) !== undefined, 'Redis to answer again');
      expect(slowReader.status()).toBe('ready');
      expect(recorder.warns).toHaveLength(1);
      expect(recorder.infos.map((i) => i.msg)).toContain('memo redis is back; using it again');
    });
  });

  describe('with a password', () => {
    const password = `pw-${randomUUID()}`;
    let redis: TestRedis;

    beforeAll(async () => {
      redis = await startRedis({ password });
    });

    afterAll(async () => {
      await redis.stop();
    });

    it('says clearly that the password is wrong, keeps it out of the logs, and still answers', async () => {
      const memo = store(redis.url.replace(password, 'not-the-password'));
      const result = await memo.connect();
      expect(result).toEqual({
        ok: false,
        code: 'MEMO_REDIS_AUTH',
        reason: expect.stringMatching(/rejected the password \(WRONGPASS\)/),
      });
      expect(memo.status()).toBe('down');
      expect(recorder.warns).toHaveLength(1);
      expect(JSON.stringify(recorder.warns[0]?.obj)).toContain('WRONGPASS');
      const logged = JSON.stringify([recorder.warns, recorder.infos, result]);
      expect(logged).not.toContain('not-the-password');
      await answers(memo.put('s', entry('p', 3)));
      expect(await answers(memo.get('s', 'p'))).toEqual(entry('p', 3));
    });

    it('says a password is needed when the URL has none', async () => {
      const memo = store(redis.url.replace(`:${password}@`, ''));
      expect(await memo.connect()).toEqual({
        ok: false,
        code: 'MEMO_REDIS_AUTH',
        reason: expect.stringMatching(/NOAUTH/),
      });
    });

    it('connects with the right password', async () => {
      const memo = store(redis.url);
      expect(await memo.connect()).toEqual({ ok: true });
      expect(memo.status()).toBe('ready');
      expect(recorder.warns).toEqual([]);
    });
  });

  describe('without a Redis', () => {
    const servers: Server[] = [];
    const sockets: Socket[] = [];

    // A TCP server that accepts connections and never says a word: a hung Redis host.
    async function listenSilently(): Promise<number> {
      const server = createServer((socket) => sockets.push(socket));
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('no port');
      return address.port;
    }

    afterEach(async () => {
      for (const socket of sockets.splice(0)) socket.destroy();
      await Promise.all(
        servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
      );
    });

    it('reports a closed port as refused and serves from the local memo', async () => {
      const server = createServer();
      const port = await new Promise<number>((resolve) =>
        server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
      );
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const memo = store(`redis://127.0.0.1:${port}`);
      expect(await memo.connect()).toEqual({
        ok: false,
        code: 'MEMO_REDIS_UNAVAILABLE',
        reason: `Redis at redis://127.0.0.1:${port} refused the connection: nothing listens there (ECONNREFUSED)`,
      });
      expect(memo.status()).toBe('down');
      await answers(memo.putUsage(usage('s', '2025-01-01T00:00:01.000Z')));
      expect((await answers(memo.getUsage()))?.session).toBe('s');
      expect(recorder.warns).toHaveLength(1);
    });

    it('gives up connecting to a host that accepts but never answers', async () => {
      const port = await listenSilently();
      const memo = store(`redis://127.0.0.1:${port}`, { connectTimeoutMs: 300, commandTimeoutMs: 100 });
      const result = await answers(memo.connect());
      // The TCP connect succeeds; the ready check then meets the per-command bound.
      expect(result).toEqual({
        ok: false,
        code: 'MEMO_REDIS_TIMEOUT',
        reason: `Redis at redis://127.0.0.1:${port} did not answer within 100 ms`,
      });
      expect(memo.status()).toBe('down');
      expect(await answers(memo.get('s', 'p'))).toBeUndefined();
    });
  });
});
