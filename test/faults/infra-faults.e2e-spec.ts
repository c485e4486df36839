import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

import { startRedis, type TestRedis } from '../support/redis';
import { startFaultStack, type FaultStack } from './support/fault-stack';
import {
  formatCounted,
  formatTable,
  LONG,
  runFault,
  SHORT,
  type Counted,
  type FaultSpec,
  type Row,
} from './support/scenario';
import { mountTmpfs, type Tmpfs } from './support/tmpfs';

// The fault suite, part 2: what guardian leans on breaks, the upstream does not. A real Redis is killed (SIGKILL,
// then restarted empty on its port) or paused (SIGSTOP/SIGCONT: a server that holds connections and answers
// nothing); the span volume, a real tmpfs, turns read-only, fills up, or is deleted. Nothing changes for the
// client: every request is answered. The span columns say what the archive holds of the spans the forwarded
// requests named (docs/RELIABILITY.md says which of these rows wait on the deferred-span fix, issue 12 defect 1).

const shape = process.env.LONG === '1' ? LONG : SHORT;

describe('faults in Redis and the span volume', () => {
  let redis: TestRedis;
  let volume: Tmpfs;
  let stack: FaultStack;
  const rows: Row[] = [];
  const counted: Counted[] = [];
  const spanDir = () => join(volume.dir, 'spans');

  beforeAll(async () => {
    redis = await startRedis({ owned: true });
    volume = await mountTmpfs(64 * 1024 * 1024);
    stack = await startFaultStack({
      stub: { window: 4096 },
      dataDir: volume.dir,
      env: { GUARDIAN_RESERVE_OUTPUT: '512', GUARDIAN_REDIS_URL: redis.url },
    });
  });
  afterAll(async () => {
    process.stdout.write(
      `\nfault table (Redis and the span volume), ${JSON.stringify(shape)}\n${formatTable(rows)}\n` +
        `${formatCounted(counted)}\n`,
    );
    await stack?.close();
    await redis?.stop();
    await volume?.unmount();
  });

  async function run(fault: FaultSpec): Promise<Row[]> {
    const ctx = {
      baseURL: stack.guardian.url,
      stub: stack.stub,
      dataDir: volume.dir,
      seed: 100 + rows.length,
    };
    const { rows: got, counted: c } = await runFault(ctx, fault, shape);
    rows.push(...got);
    counted.push(c);
    for (const row of got) {
      const id = [row.fault, row.route, row.mode];
      expect([...id, row.answered]).toEqual([...id, row.sent]);
      expect([...id, row.outcomes.get('ok')]).toEqual([...id, row.sent]);
      expect([...id, row.verify]).toEqual([...id, expect.stringMatching(/^OK/)]);
    }
    expect(got.reduce((n, r) => n + r.acked.size, 0)).toBeGreaterThan(0);
    return got;
  }

  it('Redis killed, then back (empty): every request answered, every named span present', async () => {
    const got = await run({
      name: 'redis-killed',
      on: () => redis.kill(),
      off: () => redis.restart(),
      during: ['ok'],
    });
    for (const row of got) expect([row.missing, row.unarchived]).toEqual([[], 0]);
    // Redis down is not a compaction failure: the memo falls back to memory, each error counted.
    expect(counted.at(-1)!.failOpen).toEqual({});
    expect(counted.at(-1)!.memoErrors).toBeGreaterThan(0);
  });

  it('Redis paused (SIGSTOP), then resumed: every request answered, every named span present', async () => {
    const got = await run({
      name: 'redis-paused',
      on: () => redis.pause(),
      off: () => redis.resume(),
      during: ['ok'],
    });
    for (const row of got) expect([row.missing, row.unarchived]).toEqual([[], 0]);
    expect(counted.at(-1)!.memoErrors).toBeGreaterThan(0);
  });

  it('span volume read-only, then writable: every request answered, spans deferred and counted', async () => {
    const got = await run({
      name: 'volume-read-only',
      on: () => volume.readOnly(),
      off: () => volume.readWrite(),
      during: ['ok'],
    });
    const c = counted.at(-1)!;
    expect(c.archiveDeferred).toBeGreaterThan(0);
    expect(c.failOpen.archive).toBeGreaterThan(0);
    // Every span a request named is on disk, and every stretch evicted while the volume was read-only was archived
    // once it could be written again (ARCHITECTURE.md#fail-open rule 3; issue 12 defect 1).
    for (const row of got) expect([row.missing, row.unarchived]).toEqual([[], 0]);
    // The one log line per reason says what happened to the request: compacted, not unchanged (defect 8).
    const line = stack.logs.find(
      (l) => l.includes('"stage":"archive"') && l.includes('"reason":"read_only"'),
    );
    expect(line).toContain('the request goes upstream compacted and the span is deferred');
  });

  it('span volume full, then freed: every request answered, spans deferred and counted', async () => {
    const got = await run({
      name: 'volume-full',
      on: () => volume.fill(),
      off: () => volume.unfill(),
      during: ['ok'],
    });
    expect(counted.at(-1)!.archiveDeferred).toBeGreaterThan(0);
    // Nothing named is missing, nothing deferred stays unarchived once the volume has room (defect 1).
    for (const row of got) expect([row.missing, row.unarchived]).toEqual([[], 0]);
    // A write the full volume refused left no empty run folder behind.
    const empty: string[] = [];
    for (const run of await readdir(spanDir()))
      // .tlog holds the writers' logs (docs/ARCHIVE_FORMAT.md#the-log), not a run.
      if (!run.startsWith('.') && !(await readdir(join(spanDir(), run))).includes('run.json'))
        empty.push(run);
    expect(empty).toEqual([]);
  });

  it('span folder deleted: every request answered, and archiving goes on in new runs (defect 2)', async () => {
    const got = await run({
      name: 'volume-deleted',
      on: () => rm(spanDir(), { recursive: true, force: true }),
      off: () => undefined,
      during: ['ok'],
    });
    const c = counted.at(-1)!;
    // Nothing deferred: each write that met the vanished run went on in a new one.
    expect(c.archiveDeferred).toBe(0);
    // Spans named before the deletion went with it; every span first named after it is there.
    for (const row of got) {
      expect(
        [...row.acked].filter(([ref, phase]) => phase !== 'before' && row.missing.includes(ref)),
      ).toEqual([]);
      expect(row.unarchived).toBe(0);
    }
  });
});
