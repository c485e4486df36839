import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SealedArchive, type SpanRef } from '@guardian/archive';
import { GuardianMetrics, createLogger } from '@guardian/telemetry';

import { GuardianState } from '../state/guardian-state';
import { SealMonitor } from './seal-monitor';

// Real spans in a real temp folder (HOUSE: never mock fs for the hash chain), written by SealedArchive and
// tampered with on disk the way `--verify` is proven.

async function until(check: () => boolean): Promise<void> {
  // Waits for a state that must come; the 5-minute bound only ends a hang (the verdict must not depend on speed).
  for (const giveUp = Date.now() + 300_000; !check() && Date.now() < giveUp;)
    await new Promise((r) => setTimeout(r, 25));
  expect(check()).toBe(true);
}

function spanInput(session: string, text = `evicted turn of ${session}`) {
  return {
    kind: 'compaction' as const,
    sessionHash: createHash('sha256').update(session).digest('hex'),
    route: 'chat',
    model: 'stub-model',
    messages: [{ role: 'user', content: text }],
    firstIndex: 1,
    summary: 'a summary',
    at: new Date(),
  };
}

describe('SealMonitor', () => {
  let root: string;
  let spanDir: string;
  let state: GuardianState;
  let metrics: GuardianMetrics;
  let own: SealedArchive;
  let errors: string[];
  let monitor: SealMonitor;
  const gauge = async () => (await metrics.sealOk.get()).values[0]?.value;

  function newMonitor(settleMs = 20): SealMonitor {
    const logger = createLogger({ level: 'silent' });
    logger.error = (_obj: unknown, msg?: string) => {
      errors.push(String(msg));
    };
    return new SealMonitor({ spanDir, anchorDir: null, archive: own, state, metrics, logger, settleMs });
  }

  async function tamper(ref: SpanRef): Promise<void> {
    const file = join(spanDir, ref.ref);
    await writeFile(file, (await readFile(file, 'utf8')).replace('evicted turn', 'edited turn'));
  }

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'cg-seal-'));
    spanDir = join(root, 'spans');
    state = new GuardianState();
    metrics = new GuardianMetrics();
    own = new SealedArchive({ spanDir, keepSpans: 500, replica: 'aaaa1111' });
    errors = [];
    monitor = newMonitor();
  });
  afterEach(async () => {
    await monitor.stop();
    await rm(root, { recursive: true, force: true });
  });

  it('reports unknown before the first verify, ok for an archive that does not exist yet', async () => {
    expect(state.sealStatus).toBe('unknown');
    expect(state.sealCheckedAt).toBeNull();
    await monitor.checkAll();
    expect([state.sealStatus, await gauge()]).toEqual(['ok', 1]);
    expect(state.sealCheckedAt).not.toBeNull();
  });

  it('verifies at start, then finds a span of its own that was changed before it looked', async () => {
    await own.write(spanInput('one'));
    // Ticks far apart: a tick between the write and the change below would verify the span before it was changed
    // (it failed so under CI load with 20 ms ticks); the check after the change is the test's own.
    monitor = newMonitor(60_000);
    monitor.start();
    await until(() => state.sealStatus === 'ok');
    const ref = await own.write(spanInput('two'));
    await tamper(ref);
    await monitor.checkOwn();
    expect([state.sealStatus, await gauge()]).toEqual(['broken', 0]);
    expect(errors).toEqual(['archive hash chain broken: run context-guardian-recall --verify for details']);
  });

  it("checks a second writer's runs of this process too, once it is watched (the capture intake's)", async () => {
    const capture = new SealedArchive({
      spanDir,
      keepSpans: 500,
      replica: 'aaaa1111',
      runName: ({ sessionHash, replica }) => `cc-${sessionHash.slice(0, 12)}-${replica}`,
    });
    monitor.watch(capture);
    await capture.write(spanInput('captured'));
    await monitor.checkAll();
    expect(state.sealStatus).toBe('ok');
    const ref = await capture.write(spanInput('captured', 'evicted turn, the next lines'));
    expect(ref.run.startsWith('cc-')).toBe(true);
    await tamper(ref);
    await monitor.checkOwn();
    expect([state.sealStatus, await gauge()]).toEqual(['broken', 0]);
  });

  it('answers what it last found of each run (for the receipts): the full verify, then its own increments', async () => {
    const theirs = await new SealedArchive({ spanDir, keepSpans: 500, replica: 'bbbb2222' }).write(
      spanInput('theirs'),
    );
    const mine = await own.write(spanInput('mine'));
    expect(monitor.verdictOf(mine.run)).toBeUndefined();
    await tamper(theirs);
    await monitor.checkAll();
    expect(monitor.verdictOf(theirs.run)).toEqual({ status: 'break', lines: 1 });
    expect(monitor.verdictOf(mine.run)).toEqual({ status: 'ok', lines: 1 });
    await own.write(spanInput('mine', 'a later turn'));
    await monitor.checkOwn();
    expect(monitor.verdictOf(mine.run)).toEqual({ status: 'ok', lines: 2 });
    const third = await own.write(spanInput('mine', 'evicted turn three'));
    await tamper(third);
    await monitor.checkOwn();
    expect(monitor.verdictOf(mine.run)?.status).toBe('break');
    expect(monitor.verdictOf('no-such-run')).toBeUndefined();
  });

  it("reads only what its own writer sealed since the last look; another replica's runs and older spans are the full verify's", async () => {
    const theirs = await new SealedArchive({ spanDir, keepSpans: 500, replica: 'bbbb2222' }).write(
      spanInput('theirs'),
    );
    const mine = await own.write(spanInput('mine'));
    await monitor.checkAll();
    await monitor.checkOwn();
    expect(state.sealStatus).toBe('ok');
    await tamper(theirs);
    await tamper(mine);
    await own.write(spanInput('mine', 'a later turn'));
    await monitor.checkOwn();
    expect(state.sealStatus).toBe('ok');
    await monitor.checkAll();
    expect([state.sealStatus, await gauge()]).toEqual(['broken', 0]);
  });

  it('goes back to ok once a full verify finds the archive sound again', async () => {
    const ref = await own.write(spanInput('restored'));
    const original = await readFile(join(spanDir, ref.ref), 'utf8');
    await tamper(ref);
    await monitor.checkAll();
    expect(state.sealStatus).toBe('broken');
    await writeFile(join(spanDir, ref.ref), original);
    await monitor.checkAll();
    expect([state.sealStatus, await gauge()]).toEqual(['ok', 1]);
  });

  it('does not report a break that is gone when it looks again (another replica between rename and chain line)', async () => {
    const theirs = await new SealedArchive({ spanDir, keepSpans: 500, replica: 'bbbb2222' }).write(
      spanInput('theirs'),
    );
    const inFlight = join(spanDir, theirs.run, '.0002.json.1.abcd.tmp');
    await writeFile(inFlight, '{}');
    monitor = newMonitor(300);
    const check = monitor.checkAll();
    setTimeout(() => void rm(inFlight), 50);
    await check;
    expect([state.sealStatus, await gauge(), errors]).toEqual(['ok', 1, []]);
  });

  it('never takes its own writes in flight for breaks, under continuous writes to 50 runs', async () => {
    monitor = newMonitor(5);
    monitor.start();
    let polls = 0;
    let zeros = 0;
    let writing = true;
    const sampler = (async () => {
      while (writing) {
        polls += 1;
        if ((await gauge()) === 0 || state.sealStatus === 'broken') zeros += 1;
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    for (let round = 0; round < 20; round++)
      await Promise.all(
        Array.from({ length: 50 }, (_, s) => own.write(spanInput(`s${s}`, `round ${round}`))),
      );
    await monitor.checkOwn();
    writing = false;
    await sampler;
    expect(polls).toBeGreaterThan(10);
    expect([zeros, errors]).toEqual([0, []]);
    expect(state.sealStatus).toBe('ok');
  });

  it('stop() aborts a full verify in progress instead of waiting for it', async () => {
    await Promise.all(Array.from({ length: 300 }, (_, s) => own.write(spanInput(`run-${s}`))));
    monitor = newMonitor();
    const all = monitor.checkAll();
    await new Promise((r) => setTimeout(r, 5));
    await monitor.stop();
    await all;
    // The verify never finished, so it published nothing.
    expect(state.sealCheckedAt).toBeNull();
    expect(state.sealStatus).toBe('unknown');
  });
});
