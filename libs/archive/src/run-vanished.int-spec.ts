import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { SpanInput } from './archive-writer';
import { CompactionLog } from './compaction-log';
import { Receipts } from './receipts';
import { pruneRuns } from './maintenance';
import { SealedArchive } from './sealed-archive';
import { verifyArchive } from './verify';

// A run folder can vanish under a live writer: the whole data folder deleted, or `--prune` removing a run that
// was idle but still open in a long-lived process. The writer used to keep failing with ENOENT, deferring every
// later span of that session until a restart (issue 12 defect 2). A vanished run is replaced by a new one.

const SESSION = 'ab'.repeat(32);

function input(n: number): SpanInput {
  return {
    kind: 'compaction',
    sessionHash: SESSION,
    route: 'chat',
    model: 'demo',
    messages: [{ role: 'user', content: `evicted turn ${n}` }],
    firstIndex: 1,
    summary: `summary ${n}`,
    at: new Date(),
  };
}

describe('a run folder that vanishes under its writer', () => {
  let root: string;
  let spanDir: string;
  let archive: SealedArchive;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'vanish-'));
    spanDir = join(root, 'spans');
    archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'vani1234' });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('is replaced by a new run on the next write when the run folder is deleted', async () => {
    const first = await archive.write(input(1));
    rmSync(join(spanDir, first.run), { recursive: true });
    const second = await archive.write(input(2));
    expect(second.run).not.toBe(first.run);
    expect(second.span).toBe(1);
    const third = await archive.write(input(3));
    expect(third).toMatchObject({ run: second.run, span: 2 });
    expect(await verifyArchive({ spanDir })).toMatchObject({ ok: true });
  });

  it('is replaced when the whole span folder is deleted, which is made again with mode 0700', async () => {
    const first = await archive.write(input(1));
    rmSync(spanDir, { recursive: true });
    const again = await Promise.all([archive.write(input(2)), archive.write(input(3))]);
    expect(again.map((r) => r.run)).toEqual([again[0].run, again[0].run]);
    expect(again[0].run).not.toBe(first.run);
    expect(statSync(spanDir).mode & 0o777).toBe(0o700);
    expect((await verifyArchive({ spanDir })).ok).toBe(true);
  });

  it('is replaced after --prune removed an idle run that this process still had open', async () => {
    const first = await archive.write(input(1));
    const later = () => new Date(Date.now() + 10 * 86_400_000);
    expect((await pruneRuns({ spanDir, retentionDays: 1, now: later })).removed).toEqual([first.run]);
    const next = await archive.write(input(2));
    expect(next.run).not.toBe(first.run);
    expect((await verifyArchive({ spanDir })).ok).toBe(true);
  });

  it('keeps the capture journal going in a new run too', async () => {
    await archive.appendJournal({ sessionHash: SESSION, entries: [{ at: new Date(), message: { n: 1 } }] });
    const run = await archive.runFor(SESSION);
    rmSync(join(spanDir, run!), { recursive: true });
    await archive.appendJournal({ sessionHash: SESSION, entries: [{ at: new Date(), message: { n: 2 } }] });
    expect(await archive.runFor(SESSION)).not.toBe(run);
  });
});

describe('open runs past maxOpenRuns', () => {
  it('closes the least recently written run (its journal sealed); that session goes on in a new run', async () => {
    const root = mkdtempSync(join(tmpdir(), 'maxruns-'));
    const spanDir = join(root, 'spans');
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'maxr1234', maxOpenRuns: 2 });
    const of = (session: string): SpanInput => ({ ...input(1), sessionHash: session.repeat(64) });
    const a1 = await archive.write(of('a'));
    await archive.appendJournal({
      sessionHash: 'a'.repeat(64),
      entries: [{ at: new Date(), message: { n: 1 } }],
    });
    await archive.write(of('b'));
    await archive.write(of('c'));
    const a2 = await archive.write(of('a'));
    expect(a2.run).not.toBe(a1.run);
    expect(await archive.runFor('b'.repeat(64))).toBeUndefined();
    // a's first run: one span and its journal segment, closed and sealed (in the background) when it was let go.
    // Waited for, however long a busy machine takes; the 5-minute bound only ends a hang (it was 2 s: a verdict).
    let verdict = await verifyArchive({ spanDir });
    for (
      const giveUp = Date.now() + 300_000;
      verdict.runs.find((r) => r.run === a1.run)?.lines !== 2 && Date.now() < giveUp;
    ) {
      await new Promise((r) => setTimeout(r, 20));
      verdict = await verifyArchive({ spanDir });
    }
    expect(verdict.ok).toBe(true);
    expect(verdict.runs.find((r) => r.run === a1.run)?.lines).toBe(2);
    rmSync(root, { recursive: true, force: true });
  });
});

describe('the compaction log and receipts folders', () => {
  it('are made once, and again when they vanish', async () => {
    const root = mkdtempSync(join(tmpdir(), 'logs-'));
    const log = new CompactionLog({ logDir: join(root, 'log'), replica: 'logs1234' });
    const receipts = new Receipts({ receiptsDir: join(root, 'receipts'), replica: 'logs1234' });
    const line = {
      run: null,
      span: null,
      session_hash: SESSION,
      owner_hash: null,
      route: 'chat',
      model: 'm',
      window: 8192,
      tokens_before: 9000,
      tokens_after: 3000,
      count_source: 'estimate',
      evicted_messages: 4,
      summary_reused: false,
      summariser_calls: 1,
      chunked: false,
      oversized_spilled: 0,
      pins: 0,
      archive_deferred: false,
      dry_run: false,
    };
    await log.append(line);
    await receipts.record({ kind: 'compaction', tokens_before: 9000, tokens_after: 3000 });
    rmSync(join(root, 'log'), { recursive: true });
    rmSync(join(root, 'receipts'), { recursive: true });
    await log.append(line);
    await receipts.record({ kind: 'compaction', tokens_before: 9000, tokens_after: 3000 });
    expect(readdirSync(join(root, 'log'))).toHaveLength(1);
    expect(readdirSync(join(root, 'receipts'))).toHaveLength(1);
    rmSync(root, { recursive: true, force: true });
  });
});
