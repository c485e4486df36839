import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SealedArchive, type SpanRef } from '@guardian/archive';
import { GuardianMetrics, createLogger } from '@guardian/telemetry';

import { GuardianState } from '../state/guardian-state';
import type { GuardianLogger } from './guardian-logger';
import { SealMonitor } from './seal-monitor';

// Real spans in a real temp folder (HOUSE: never mock fs for the hash chain), written by SealedArchive and
// tampered with on disk the way `--verify` is proven.

const OWN = 'aaaa1111';
const OTHER = 'bbbb2222';

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  expect(check()).toBe(true);
}

describe('SealMonitor', () => {
  let spanDir: string;
  let state: GuardianState;
  let metrics: GuardianMetrics;
  let monitor: SealMonitor;
  const gauge = async () => (await metrics.sealOk.get()).values[0]?.value;

  async function writeSpan(replica: string, session: string): Promise<SpanRef> {
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica });
    return archive.write({
      kind: 'compaction',
      sessionHash: createHash('sha256').update(session).digest('hex'),
      route: 'chat',
      model: 'stub-model',
      messages: [{ role: 'user', content: `evicted turn of ${session}` }],
      firstIndex: 1,
      summary: 'a summary',
      at: new Date(),
    });
  }

  async function tamper(ref: SpanRef): Promise<void> {
    const file = join(spanDir, ref.ref);
    await writeFile(file, (await readFile(file, 'utf8')).replace('evicted turn', 'edited turn'));
  }

  beforeEach(async () => {
    spanDir = join(await mkdtemp(join(tmpdir(), 'cg-seal-')), 'spans');
    state = new GuardianState();
    metrics = new GuardianMetrics();
    const logger: GuardianLogger = createLogger({ level: 'silent' });
    monitor = new SealMonitor({
      spanDir,
      anchorDir: null,
      replica: OWN,
      state,
      metrics,
      logger,
      settleMs: 20,
    });
  });
  afterEach(async () => {
    await monitor.stop();
    await rm(join(spanDir, '..'), { recursive: true, force: true });
  });

  it('reports unknown before the first verify, ok for an archive that does not exist yet', async () => {
    expect(state.sealStatus).toBe('unknown');
    expect(state.sealCheckedAt).toBeNull();
    await monitor.checkAll();
    expect(state.sealStatus).toBe('ok');
    expect(state.sealCheckedAt).not.toBeNull();
    expect(await gauge()).toBe(1);
  });

  it('verifies at start, and re-verifies its own runs after a compaction is reported', async () => {
    const ref = await writeSpan(OWN, 'one');
    monitor.start();
    await until(() => state.sealStatus === 'ok');
    await tamper(ref);
    state.emit({ kind: 'compaction', route: 'chat', model: 'stub-model' });
    await until(() => state.sealStatus === 'broken');
    expect(await gauge()).toBe(0);
  });

  it("checks only its own runs after a write, and another replica's in the full verify", async () => {
    await writeSpan(OWN, 'mine');
    const theirs = await writeSpan(OTHER, 'theirs');
    monitor.start();
    await until(() => state.sealStatus === 'ok');
    const firstCheck = state.sealCheckedAt;
    await tamper(theirs);
    await new Promise((r) => setTimeout(r, 5)); // a later checkedAt, so the second check is visible
    state.emit({ kind: 'compaction', route: 'chat', model: 'stub-model' });
    await until(() => state.sealCheckedAt !== firstCheck);
    expect(state.sealStatus).toBe('ok');
    await monitor.checkAll();
    expect([state.sealStatus, await gauge()]).toEqual(['broken', 0]);
  });

  it('goes back to ok once a full verify finds the archive sound again', async () => {
    const ref = await writeSpan(OWN, 'restored');
    const original = await readFile(join(spanDir, ref.ref), 'utf8');
    await tamper(ref);
    await monitor.checkAll();
    expect(state.sealStatus).toBe('broken');
    await writeFile(join(spanDir, ref.ref), original);
    await monitor.checkAll();
    expect([state.sealStatus, await gauge()]).toEqual(['ok', 1]);
  });
});
