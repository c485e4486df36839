import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { logFolder, readLogFile, repairRun, verifyArchive, verifyLogs, verifyRun } from '@guardian/archive';

import { verifyLogsIndependently } from './independent-log-verifier';
import { runWriter } from './support';

// Short variant in CI (ARCHITECTURE.md#tests); LONG=1 runs hundreds of kill cycles.
const CYCLES = process.env.LONG === '1' ? 100 : 5;
const POINTS = ['after-span-fsync', 'after-rename', 'mid-chain-line'] as const;

describe('a writer killed mid-write', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'crash-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it.each(POINTS)(
    'at %s: verify names one unsealed-file break at the tail, and --repair closes it',
    async (point) => {
      const spanDir = join(root, point);
      for (let cycle = 0; cycle < CYCLES; cycle += 1) {
        const crashOn = 1 + (cycle % 3);
        const child = await runWriter({
          SPAN_DIR: spanDir,
          WRITES: '5',
          GUARDIAN_TEST_CRASH_POINT: `${point}@${crashOn}`,
        });
        expect(child.signal).toBe('SIGKILL');
        const { runs } = await verifyArchive({ spanDir });
        const broken = runs.filter((r) => r.status === 'break');
        // Every earlier cycle was repaired: exactly the run just killed is broken, at its tail.
        expect(broken).toHaveLength(1);
        const verdict = broken[0]!;
        expect(verdict.break).toMatchObject({ kind: 'unsealed-file' });
        expect(verdict.lines).toBe(crashOn - 1);
        await repairRun({ spanDir, run: verdict.run });
        expect((await verifyRun({ spanDir, run: verdict.run })).break).toBeNull();
      }
      expect((await verifyArchive({ spanDir })).ok).toBe(true);
    },
  );

  it('killed after a span was placed and before its commit: the span and its line are kept, nothing is torn', async () => {
    // What a request is forwarded after (ADR 0013): the span file in place and its chain line written. The process
    // dies before the run's commit (folder and chain fsync, anchor, index): the page cache keeps what was written.
    const spanDir = join(root, 'before-commit');
    const anchorDir = join(root, 'before-commit-anchor');
    const child = await runWriter({
      SPAN_DIR: spanDir,
      ANCHOR_DIR: anchorDir,
      WRITES: '5',
      GUARDIAN_TEST_CRASH_POINT: 'before-commit@3',
    });
    expect(child.signal).toBe('SIGKILL');
    const { ok, runs } = await verifyArchive({ spanDir, anchorDir });
    expect(ok).toBe(true);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: 'ok', lines: 3 });
    // The anchor lags the chain by the commit that did not run (docs/ARCHIVE_FORMAT.md §4).
    const anchor = readFileSync(join(anchorDir, `${runs[0]!.run}.jsonl`), 'utf8')
      .trim()
      .split('\n');
    expect(anchor).toHaveLength(2);
  });

  it('two writer processes on one span folder: no forks, no lost spans', async () => {
    const spanDir = join(root, 'two-writers');
    const [a, b] = await Promise.all([
      runWriter({ SPAN_DIR: spanDir, WRITES: '30', SESSIONS: '2', REPLICA: 'aaaa1111' }),
      runWriter({ SPAN_DIR: spanDir, WRITES: '30', SESSIONS: '2', REPLICA: 'bbbb2222' }),
    ]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const { ok, runs } = await verifyArchive({ spanDir });
    expect(ok).toBe(true);
    expect(runs).toHaveLength(4);
    expect(runs.reduce((sum, r) => sum + r.lines, 0)).toBe(60);
  });

  // Issue 29's crash window: a writer killed after spans were committed (or only placed) and before the checkpoint
  // that would cover them. Their lines name its log; the next writer started on this host logs them.
  it.each(['before-checkpoint', 'before-commit'] as const)(
    'killed at %s: the span without an entry is span-unlogged, and the next writer on this host logs it',
    async (point) => {
      const spanDir = join(root, `window-${point}`);
      const verifiedDir = join(root, `window-${point}-verified`);
      const dead = await runWriter({
        SPAN_DIR: spanDir,
        WRITES: '5',
        LOG: '1',
        REPLICA: 'dead0001',
        GUARDIAN_TEST_CRASH_POINT: `${point}@3`,
      });
      expect(dead.signal).toBe('SIGKILL');
      // The first two spans were logged (each write waits for its checkpoint); the third never was.
      const before = await verifyLogs({ spanDir, verifiedDir: null });
      expect(before.logs).toEqual([
        expect.objectContaining({
          log: 'dead0001',
          size: 2,
          writer: 'dead',
          status: 'break',
          break: expect.objectContaining({ kind: 'span-unlogged' }),
        }),
      ]);
      expect((await verifyLogsIndependently(spanDir)).logs).toEqual([
        expect.objectContaining({ log: 'dead0001', status: 'BREAK', kind: 'span-unlogged' }),
      ]);

      const next = await runWriter({ SPAN_DIR: spanDir, WRITES: '1', LOG: '1', REPLICA: 'next0002' });
      expect([next.code, next.signal]).toEqual([0, null]);
      const after = await verifyLogs({ spanDir, verifiedDir });
      expect(after.ok).toBe(true);
      expect(after.logs).toEqual([
        expect.objectContaining({ log: 'dead0001', size: 3, writer: 'released', status: 'ok', waiting: 0 }),
        expect.objectContaining({ log: 'next0002', size: 1, writer: 'released', status: 'ok' }),
      ]);
      const entries = (await readLogFile(logFolder(spanDir, 'dead0001'), 'tile/entries/000.p/3'))!.toString(
        'utf8',
      );
      expect(entries).toMatch(/context-guardian span [\w-]+-dead0001 3 sha256:[0-9a-f]{64}$/);
      expect((await verifyLogsIndependently(spanDir)).logs.map((l) => [l.log, l.status])).toEqual([
        ['dead0001', 'OK'],
        ['next0002', 'OK'],
      ]);
      expect((await verifyArchive({ spanDir })).ok).toBe(true);
    },
    120_000,
  );

  it('a taker of a shared log killed before its checkpoint: the next taker logs what it left, then its own', async () => {
    const spanDir = join(root, 'window-shared');
    const shared = { SPAN_DIR: spanDir, LOG: '1', LOG_NAME: 'shared1', SHARED: '1' };
    const dead = await runWriter({
      ...shared,
      WRITES: '3',
      REPLICA: 'dead0003',
      GUARDIAN_TEST_CRASH_POINT: 'before-checkpoint@2',
    });
    expect(dead.signal).toBe('SIGKILL');
    expect((await verifyLogs({ spanDir, verifiedDir: null })).logs).toEqual([
      expect.objectContaining({ log: 'shared1', size: 1, writer: 'dead', status: 'break' }),
    ]);
    const next = await runWriter({ ...shared, WRITES: '1', REPLICA: 'next0004' });
    expect(next.code).toBe(0);
    const after = await verifyLogs({ spanDir, verifiedDir: null });
    expect(after.ok).toBe(true);
    expect(after.logs).toEqual([expect.objectContaining({ log: 'shared1', size: 3, writer: 'released' })]);
    const entries = (await readLogFile(logFolder(spanDir, 'shared1'), 'tile/entries/000.p/3'))!.toString(
      'utf8',
    );
    // The dead taker's second span comes before the next taker's own.
    expect(entries.indexOf('-dead0003 2 ')).toBeGreaterThan(-1);
    expect(entries.indexOf('-dead0003 2 ')).toBeLessThan(entries.indexOf('-next0004 1 '));
  });
});
