import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  LogProofs,
  SealedArchive,
  SpanLog,
  logFolder,
  parseVerifierKey,
  pruneRuns,
  sha256Hex,
  verifyLogs,
  verifyRun,
  verifyTlogProof,
  writerLog,
  type SpanRef,
} from '@guardian/archive';

import { verifyLogsIndependently, type KeptCheckpoint } from './independent-log-verifier';

const SEED = Buffer.alloc(32, 9);
const ORIGIN = 'test.example/w1';

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

function sha(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Canonical JSON of a chain line (flat: strings, integers, booleans, arrays of strings), as ARCHIVE_FORMAT.md §3. */
function canonical(line: Record<string, unknown>): string {
  return `{${Object.keys(line)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(line[k])}`)
    .join(',')}}`;
}

/** What a volume's holder can do to a chain: change lines and rehash every line after, so the chain walk passes. */
function rewriteChain(
  runDir: string,
  edit: (lines: Record<string, unknown>[]) => Record<string, unknown>[],
): void {
  const lines = readFileSync(join(runDir, 'chain.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  let prev = '0'.repeat(64);
  const out = edit(lines).map((line, i) => {
    const rest: Record<string, unknown> = { ...line, seq: i + 1, prev };
    delete rest.hash;
    prev = sha(canonical(rest));
    return `${canonical({ ...rest, hash: prev })}\n`;
  });
  writeFileSync(join(runDir, 'chain.jsonl'), out.join(''));
}

describe('--verify against the writers logs (issue 29 item 5)', () => {
  let root: string;
  let spanDir: string;
  let verifiedDir: string;
  let refs: SpanRef[];
  let earlier: string;
  let dir: string;
  let keyFile: string;

  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), 'log-verify-'));
    spanDir = join(root, 'spans');
    verifiedDir = join(root, 'verified');
    keyFile = join(root, 'log.key');
    writeFileSync(
      keyFile,
      `PRIVATE+KEY+x+00000000+${Buffer.concat([Buffer.of(1), SEED]).toString('base64')}\n`,
    );
    const archive = new SealedArchive({
      spanDir,
      keepSpans: 3,
      replica: 'w1',
      log: writerLog({ name: 'w1', originPrefix: 'test.example', keyFile }),
    });
    dir = logFolder(spanDir, 'w1');
    refs = [];
    for (let i = 0; i < 2; i += 1) refs.push(await archive.write(span('a', i)));
    earlier = readFileSync(join(dir, 'checkpoint'), 'utf8');
    for (let i = 2; i < 5; i += 1) refs.push(await archive.write(span(i === 4 ? 'b' : 'a', i)));
    await archive.close();
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const lib = async () => (await verifyLogs({ spanDir, verifiedDir })).logs[0];
  const independent = async (kept?: KeptCheckpoint) =>
    (await verifyLogsIndependently(spanDir, kept ? { w1: kept } : {})).logs[0];
  const keptNow = (): KeptCheckpoint => ({
    vkey: readFileSync(join(dir, 'vkey'), 'utf8').trim(),
    checkpoint: readFileSync(join(dir, 'checkpoint'), 'utf8'),
  });
  const runOf = (i: number) => join(spanDir, refs[i]!.run);

  it('accepts what the writer wrote, pins its checkpoint, and checks the next verify against the pin', async () => {
    // Session a's run has four spans and keeps three (GUARDIAN_KEEP_SPANS): its first span is pruned as expected.
    expect(await lib()).toMatchObject({
      origin: ORIGIN,
      size: 5,
      status: 'pruned-ok',
      pruned: 1,
      since: null,
    });
    expect(await lib()).toMatchObject({ status: 'pruned-ok', since: 5, pinned: true });
    expect(await independent()).toMatchObject({ status: 'pruned-ok' });
    expect(readdirSync(verifiedDir)).toHaveLength(1);
  });

  it('reads spans removed by GUARDIAN_KEEP_SPANS and runs removed by --prune as pruned; old proofs stay valid', async () => {
    const vkey = parseVerifierKey(readFileSync(join(dir, 'vkey'), 'utf8'));
    const [before] = await new LogProofs(spanDir).attach([{ run: refs[0]!.run, span: 1 }]);
    await pruneRuns({ spanDir, retentionDays: 1, now: () => new Date(Date.now() + 3 * 86_400_000) });
    expect(await lib()).toMatchObject({ status: 'pruned-ok', pruned: 5 });
    expect(await independent()).toMatchObject({ status: 'pruned-ok' });
    const [after] = await new LogProofs(spanDir).attach([{ run: refs[0]!.run, span: 1 }]);
    expect(after!.log_proof).toBe(before!.log_proof);
    expect(verifyTlogProof(after!.log_proof!, after!.log_entry!, vkey)).toMatchObject({ ok: true });
  });

  it('names a deleted newest span span-missing, even with its chain line cut so the chain walk passes', async () => {
    unlinkSync(join(spanDir, refs[3]!.ref));
    rewriteChain(runOf(3), (lines) => lines.filter((l) => l.file !== '0004.json'));
    expect((await verifyRun({ spanDir, run: refs[3]!.run })).status).not.toBe('break');
    expect(await lib()).toMatchObject({ status: 'break', break: { kind: 'span-missing', entry: 3 } });
    expect(await independent()).toMatchObject({ status: 'BREAK', kind: 'span-missing' });
    // A whole run deleted without a --prune record is as missing.
    rmSync(runOf(4), { recursive: true });
    expect((await verifyLogsIndependently(spanDir)).logs[0]).toMatchObject({ kind: 'span-missing' });
  });

  it('names an edited span span-changed, even with its chain line rehashed so the chain walk passes', async () => {
    const file = join(spanDir, refs[4]!.ref);
    const edited = readFileSync(file, 'utf8').replace('message 4', 'message X');
    writeFileSync(file, edited);
    rewriteChain(runOf(4), (lines) =>
      lines.map((l) =>
        l.file === '0001.json' ? { ...l, sha256: sha(edited), size: Buffer.byteLength(edited) } : l,
      ),
    );
    expect((await verifyRun({ spanDir, run: refs[4]!.run })).status).toBe('ok');
    expect(await lib()).toMatchObject({ status: 'break', break: { kind: 'span-changed', entry: 4 } });
    expect(await independent()).toMatchObject({ status: 'BREAK', kind: 'span-changed' });
  });

  it.each([
    ['an entry rewritten', () => flip(join(dir, 'tile', 'entries', '000.p', '5'), 40)],
    ['a hash tile changed', () => flip(join(dir, 'tile', '0', '000.p', '5'), 3)],
    ['the log truncated', () => unlinkSync(join(dir, 'tile', 'entries', '000.p', '5'))],
  ])('names %s log-rewritten', async (_what, tamper) => {
    tamper();
    expect(await lib()).toMatchObject({ status: 'break', break: { kind: 'log-rewritten' } });
    expect(await independent()).toMatchObject({ status: 'BREAK', kind: 'log-rewritten' });
  });

  function flip(file: string, at: number): void {
    const bytes = readFileSync(file);
    bytes[at] = (bytes[at] ?? 0) ^ 1;
    writeFileSync(file, bytes);
  }

  it('names a rolled-back checkpoint, or a history signed again, log-rolled-back against the pin', async () => {
    expect(await lib()).toMatchObject({ status: 'pruned-ok', pinned: true });
    const kept = keptNow();
    const newest = readFileSync(join(dir, 'checkpoint'), 'utf8');
    writeFileSync(join(dir, 'checkpoint'), earlier);
    expect(await lib()).toMatchObject({ status: 'break', break: { kind: 'log-rolled-back' } });
    expect(await independent(kept)).toMatchObject({ status: 'BREAK', kind: 'log-rolled-back' });
    // Whoever holds the volume holds the key too: a new history of five entries, signed, is still not the pinned one.
    const forged = join(root, 'forged');
    const log = await SpanLog.open({ dir: forged, origin: ORIGIN, seed: SEED });
    await log.append(
      refs.map(
        (r, i) =>
          `context-guardian span ${r.run} ${r.span} sha256:${i === 0 ? 'f'.repeat(64) : sha(readFileSync(join(spanDir, r.ref)))}`,
      ),
    );
    rmSync(dir, { recursive: true });
    cpSync(forged, dir, { recursive: true });
    expect(readFileSync(join(dir, 'checkpoint'), 'utf8')).not.toBe(newest);
    expect(await lib()).toMatchObject({ status: 'break', break: { kind: 'log-rolled-back' } });
    expect(await independent(kept)).toMatchObject({ status: 'BREAK', kind: 'log-rolled-back' });
  });

  it('names a changed signature or key log-signature', async () => {
    expect(await lib()).toMatchObject({ status: 'pruned-ok', pinned: true });
    const kept = keptNow();
    const other = await SpanLog.open({ dir: join(root, 'other'), origin: ORIGIN, seed: Buffer.alloc(32, 1) });
    writeFileSync(join(dir, 'vkey'), `${other.verifierKey}\n`);
    expect(await lib()).toMatchObject({ status: 'break', break: { kind: 'log-signature' } });
    expect(await independent(kept)).toMatchObject({ status: 'BREAK', kind: 'log-signature' });
    writeFileSync(join(dir, 'vkey'), `${kept.vkey}\n`);
    const note = readFileSync(join(dir, 'checkpoint'));
    flip(join(dir, 'checkpoint'), note.length - 6);
    expect(await lib()).toMatchObject({ status: 'break', break: { kind: 'log-signature' } });
    expect(await independent(kept)).toMatchObject({ status: 'BREAK', kind: 'log-signature' });
  });

  it('names a span file older than its run newest entry, with no entry, span-unlogged (a log signed anew without it)', async () => {
    const forged = join(root, 'forged');
    const log = await SpanLog.open({ dir: forged, origin: ORIGIN, seed: SEED });
    await log.append(
      refs
        .filter((_r, i) => i > 1) // span 1 is pruned; span 2 is left out
        .map(
          (r) => `context-guardian span ${r.run} ${r.span} sha256:${sha(readFileSync(join(spanDir, r.ref)))}`,
        ),
    );
    rmSync(dir, { recursive: true });
    cpSync(forged, dir, { recursive: true });
    expect(await lib()).toMatchObject({ status: 'break', break: { kind: 'span-unlogged' } });
    expect(await independent()).toMatchObject({ status: 'BREAK', kind: 'span-unlogged' });
  });

  /** A log signed anew from `entries` put in place of w1's (writer.json kept as it was): what a key holder can do. */
  async function replaceLog(entries: string[]): Promise<void> {
    const forged = join(root, 'forged');
    const log = await SpanLog.open({ dir: forged, origin: ORIGIN, seed: SEED });
    await log.append(entries);
    cpSync(join(dir, 'writer.json'), join(forged, 'writer.json'));
    rmSync(dir, { recursive: true });
    cpSync(forged, dir, { recursive: true });
  }
  const entryOf = (r: SpanRef) =>
    `context-guardian span ${r.run} ${r.span} sha256:${sha(readFileSync(join(spanDir, r.ref)))}`;
  const entriesBut = (skip: number) =>
    refs.flatMap((r, i) =>
      i === skip ? [] : [i === 0 ? `context-guardian span ${r.run} 1 sha256:${'0'.repeat(64)}` : entryOf(r)],
    );

  it('names a span with no entry at all span-unlogged once its writer let go, newest of its run or not', async () => {
    // Session b's run has one span (refs[4]): with its entry left out, that run has no entry at all. Span 1 of
    // session a is pruned, so its entry's sha256 is never compared.
    await replaceLog(entriesBut(4));
    expect(JSON.parse(readFileSync(join(dir, 'writer.json'), 'utf8'))).toMatchObject({ released: true });
    expect(await lib()).toMatchObject({
      writer: 'released',
      status: 'break',
      break: { kind: 'span-unlogged', detail: expect.stringContaining(`${refs[4]!.run}/0001.json`) },
    });
    expect(await independent()).toMatchObject({ status: 'BREAK', kind: 'span-unlogged' });
  });

  it('lets the newest spans of a live writer wait for its checkpoint, and names them once it stops', async () => {
    const live = new SealedArchive({
      spanDir,
      keepSpans: 3,
      replica: 'w9',
      log: writerLog({ name: 'w9', originPrefix: 'test.example', keyFile }),
    });
    const ref = await live.write(span('c', 0));
    // Its entry is taken out of the log as if the checkpoint covering it had not come yet; the writer lives on.
    const liveDir = logFolder(spanDir, 'w9');
    rmSync(join(liveDir, 'checkpoint'));
    rmSync(join(liveDir, 'tile'), { recursive: true });
    const waiting = (await verifyLogs({ spanDir, verifiedDir })).logs.find((l) => l.log === 'w9');
    expect(waiting).toMatchObject({ size: 0, writer: 'live', status: 'ok', waiting: 1 });
    expect((await verifyLogsIndependently(spanDir)).logs.find((l) => l.log === 'w9')).toMatchObject({
      status: 'OK',
      waiting: 1,
    });
    await live.stop();
    expect((await verifyLogs({ spanDir, verifiedDir: null })).logs.find((l) => l.log === 'w9')).toMatchObject(
      {
        writer: 'released',
        status: 'break',
        break: { kind: 'span-unlogged', detail: expect.stringContaining(`${ref.run}/0001.json`) },
      },
    );
  });

  it('names a pinned log deleted with its runs log-missing, and a log deleted under its runs too', async () => {
    const w2 = new SealedArchive({
      spanDir,
      keepSpans: 3,
      replica: 'w2',
      log: writerLog({ name: 'w2', originPrefix: 'test.example', keyFile }),
    });
    const gone = await w2.write(span('c', 0));
    await w2.close();
    // A pin of another volume's log (another key) in the same folder is not this volume's to miss.
    const other = join(root, 'other');
    await SpanLog.open({
      dir: logFolder(other, 'x1'),
      origin: 'other.example/x1',
      seed: Buffer.alloc(32, 2),
    }).then((log) => log.append(['context-guardian span elsewhere 1 sha256:' + '1'.repeat(64)]));
    await verifyLogs({ spanDir: other, verifiedDir });
    expect((await verifyLogs({ spanDir, verifiedDir })).ok).toBe(true);
    const kept: KeptCheckpoint = {
      vkey: readFileSync(join(logFolder(spanDir, 'w2'), 'vkey'), 'utf8').trim(),
      checkpoint: readFileSync(join(logFolder(spanDir, 'w2'), 'checkpoint'), 'utf8'),
    };
    rmSync(logFolder(spanDir, 'w2'), { recursive: true });
    rmSync(join(spanDir, gone.run), { recursive: true });
    const after = await verifyLogs({ spanDir, verifiedDir });
    expect(after.ok).toBe(false);
    expect(after.logs.map((l) => [l.log, l.status, l.break?.kind ?? null])).toEqual([
      ['w1', 'pruned-ok', null],
      ['w2', 'break', 'log-missing'],
    ]);
    expect(after.logs[1]).toMatchObject({ origin: 'test.example/w2' });
    expect((await verifyLogsIndependently(spanDir, { w2: kept })).logs[1]).toMatchObject({
      log: 'w2',
      status: 'BREAK',
      kind: 'log-missing',
    });
    // Without any pin: w1's folder deleted while its runs stay; their span lines name it.
    rmSync(dir, { recursive: true });
    expect((await verifyLogs({ spanDir, verifiedDir: null })).logs).toEqual([
      expect.objectContaining({
        log: 'w1',
        status: 'break',
        break: expect.objectContaining({ kind: 'log-missing' }),
      }),
    ]);
    expect((await verifyLogsIndependently(spanDir)).logs).toEqual([
      expect.objectContaining({ log: 'w1', status: 'BREAK', kind: 'log-missing' }),
    ]);
  });

  it('reports spans written before the log existed as such, not as breaks', async () => {
    const older = join(root, 'older');
    const before = new SealedArchive({ spanDir: older, keepSpans: 10, replica: 'old1' });
    await before.write(span('x', 0));
    await before.write(span('x', 1));
    const now = new SealedArchive({
      spanDir: older,
      keepSpans: 10,
      replica: 'new1',
      log: writerLog({ name: 'new1', originPrefix: 'test.example', keyFile }),
    });
    await now.write(span('y', 0));
    await now.close();
    const report = await verifyLogs({ spanDir: older, verifiedDir: null });
    expect(report).toMatchObject({ ok: true, withoutLog: { spans: 2, runs: 1 } });
    expect(report.logs).toEqual([expect.objectContaining({ log: 'new1', status: 'ok', size: 1 })]);
    expect(await verifyLogsIndependently(older)).toMatchObject({
      withoutLog: 2,
      logs: [expect.objectContaining({ log: 'new1', status: 'OK' })],
    });
  });
});
