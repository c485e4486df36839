import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { repairRun, verifyArchive, verifyRun } from '@guardian/archive';

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
});
