import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { sha256Hex } from './canonical-json';
import { verifyLogs } from './log-verify';
import type { ArchiveWarning } from './run-writer';
import { SealedArchive } from './sealed-archive';
import { writerLog } from './writer-log';

function span(session: string, i: number) {
  return {
    kind: 'compaction' as const,
    sessionHash: sha256Hex(session),
    route: 'chat',
    model: 'm',
    messages: [{ role: 'user', content: `message ${i} of ${session}` }],
    firstIndex: i,
    summary: `summary ${i}`,
    at: new Date(),
  };
}

const KEY = `PRIVATE+KEY+x+00000000+${Buffer.concat([Buffer.of(1), Buffer.alloc(32, 5)]).toString('base64')}\n`;

describe("a writer's log: taken in turns, bounded while it cannot open (issue 29)", () => {
  let root: string;
  let spanDir: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'writer-log-'));
    spanDir = join(root, 'spans');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const shared = (replica: string, signal?: AbortSignal) =>
    new SealedArchive({
      spanDir,
      keepSpans: 100,
      replica,
      log: { ...writerLog({ name: 'shared1', originPrefix: 'test.example' }), shared: true, signal },
    });

  it('a shared log is written by one process at a time: the next waits until the holder lets it go', async () => {
    const a = shared('aaaa0001');
    await a.write(span('a', 0));
    const order: string[] = [];
    const b = shared('bbbb0002');
    const bWrote = b.write(span('b', 0)).then(() => order.push('b wrote'));
    await a.stop();
    order.push('a let go');
    await bWrote;
    await b.stop();
    expect(order).toEqual(['a let go', 'b wrote']);
    const report = await verifyLogs({ spanDir, verifiedDir: null });
    expect(report.ok).toBe(true);
    expect(report.logs).toEqual([expect.objectContaining({ log: 'shared1', size: 2, writer: 'released' })]);
  });

  it('a taker whose wait is aborted starts no run, so nothing names the log it does not hold', async () => {
    const a = shared('aaaa0001');
    await a.write(span('a', 0));
    const stop = new AbortController();
    const b = shared('bbbb0002', stop.signal);
    const bWrite = b.write(span('b', 0));
    stop.abort(new Error('the hook deadline'));
    await expect(bWrite).rejects.toMatchObject({ code: 'ARCHIVE_WRITE_FAILED' });
    expect(readdirSync(spanDir).filter((n) => n.includes('bbbb0002'))).toEqual([]);
    await a.stop();
    expect((await verifyLogs({ spanDir, verifiedDir: null })).ok).toBe(true);
  });

  it('holds a bounded number of entries while the log cannot open, warns of each drop, and a successor logs them', async () => {
    const keyFile = join(root, 'secret', 'log.key'); // a Secret not mounted yet
    const warnings: ArchiveWarning[] = [];
    const archive = new SealedArchive({
      spanDir,
      keepSpans: 100,
      replica: 'w1',
      log: { ...writerLog({ name: 'w1', originPrefix: 'test.example', keyFile }), maxWaiting: 2 },
      onWarning: (w) => warnings.push(w),
    });
    for (let i = 0; i < 4; i += 1) await archive.write(span('a', i));
    // Two entries wait; the next two commits drop theirs, each drop told (the sidecar counts and logs it once).
    expect(warnings.filter((w) => w.code === 'ARCHIVE_LOG_BEHIND')).toHaveLength(2);
    expect(warnings.some((w) => w.code === 'ARCHIVE_LOG_FAILED')).toBe(true);
    mkdirSync(join(root, 'secret'));
    writeFileSync(keyFile, KEY, { mode: 0o600 });
    await archive.stop();
    // The two that waited are logged; the dropped two are not, and the log is left unreleased for a successor.
    const left = await verifyLogs({ spanDir, verifiedDir: null });
    expect(left.logs).toEqual([
      expect.objectContaining({
        log: 'w1',
        size: 2,
        writer: 'dead',
        status: 'break',
        break: expect.objectContaining({ kind: 'span-unlogged' }),
      }),
    ]);
    const next = new SealedArchive({
      spanDir,
      keepSpans: 100,
      replica: 'w2',
      log: writerLog({ name: 'w2', originPrefix: 'test.example', keyFile }),
    });
    await next.start();
    const after = await verifyLogs({ spanDir, verifiedDir: null });
    expect(after.ok).toBe(true);
    expect(after.logs).toEqual([expect.objectContaining({ log: 'w1', size: 4, writer: 'released' })]);
  });
});
