import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CompactionLog, type CompactionLogInput } from './compaction-log';
import { Receipts } from './receipts';
import { parseAge, receiptsSummary, savingsSummary } from './savings';
import { SealedArchive } from './sealed-archive';
import { UsageLog } from './usage-log';

const NOW = new Date('2026-11-01T12:00:00Z');

function logLine(over: Partial<CompactionLogInput> = {}): CompactionLogInput {
  return {
    run: 'r',
    span: 1,
    session_hash: 'a'.repeat(64),
    owner_hash: null,
    route: 'chat',
    model: 'demo',
    window: 32768,
    tokens_before: 10000,
    tokens_after: 2000,
    count_source: 'estimate',
    evicted_messages: 12,
    summary_reused: false,
    summariser_calls: 1,
    chunked: false,
    oversized_spilled: 0,
    pins: 0,
    archive_deferred: false,
    dry_run: false,
    ...over,
  };
}

describe('parseAge', () => {
  it.each([
    ['30m', 1_800_000],
    ['24h', 86_400_000],
    ['7d', 604_800_000],
    ['2w', 1_209_600_000],
  ])('%s', (age, ms) => expect(parseAge(age)).toBe(ms));
  it.each(['', '7', 'd', '-1d', '1y', '0d', '7 days'])('refuses %p', (age) => {
    expect(() => parseAge(age)).toThrow(expect.objectContaining({ code: 'ARCHIVE_BAD_AGE' }));
  });
});

describe('compaction log, receipts and their summaries', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'savings-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('writes one log file per replica and UTC day, with the contract fields', async () => {
    const log = new CompactionLog({ logDir: join(root, 'log'), replica: 'abcd1234', now: () => NOW });
    const line = await log.append(logLine());
    expect(readdirSync(join(root, 'log'))).toEqual(['abcd1234-20261101.jsonl']);
    const stored = JSON.parse(readFileSync(join(root, 'log', 'abcd1234-20261101.jsonl'), 'utf8'));
    expect(stored).toEqual(line);
    expect(Object.keys(stored).sort()).toEqual(
      [
        'ts',
        'replica',
        'run',
        'span',
        'session_hash',
        'owner_hash',
        'route',
        'model',
        'window',
        'tokens_before',
        'tokens_after',
        'count_source',
        'evicted_messages',
        'summary_reused',
        'summariser_calls',
        'chunked',
        'oversized_spilled',
        'pins',
        'archive_deferred',
        'dry_run',
      ].sort(),
    );
  });

  it('adds up savings since AGE, skipping dry runs and lines before the window', async () => {
    const logDir = join(root, 'log');
    const log = new CompactionLog({ logDir, replica: 'r1', now: () => NOW });
    await log.append(logLine());
    await log.append(logLine({ tokens_before: 5000, tokens_after: 1000, summary_reused: true }));
    await log.append(
      logLine({ evicted_messages: 0, tokens_before: 3000, tokens_after: 1500, oversized_spilled: 1 }),
    );
    await log.append(logLine({ dry_run: true, tokens_before: 99999, tokens_after: 1 }));
    await log.append(logLine({ ts: '2026-10-01T00:00:00.000Z' }));
    mkdirSync(logDir, { recursive: true });
    writeFileSync(join(logDir, 'r2-20261101.jsonl'), '{"torn":\n');
    const receipts = new Receipts({ receiptsDir: join(root, 'receipts'), replica: 'r1', now: () => NOW });
    await receipts.record({ kind: 'recall_call', hits: 3, chars_returned: 170 });
    await receipts.record({ kind: 'recall_tool_call', chars_returned: 3000 });
    // The usage log: two answers (one without usage from the backend) and a summary; one answer before the window.
    let clock = new Date(NOW.getTime() - 8 * 86_400_000);
    const usage = new UsageLog({ usageDir: join(root, 'usage'), replica: 'r1', now: () => clock });
    const answer = { kind: 'answer', owner_hash: null, route: 'chat', model: 'm' } as const;
    await usage.append({ ...answer, tokens_in: 70_000, tokens_out: 700 });
    clock = NOW;
    await usage.append({ ...answer, tokens_in: 4100, tokens_out: 42 });
    await usage.append({ ...answer, tokens_in: null, tokens_out: null });
    await usage.append({ ...answer, kind: 'summary', tokens_in: 9000, tokens_out: 300 });
    const summary = await savingsSummary({
      since: '7d',
      logDir,
      usageDir: join(root, 'usage'),
      receiptsDir: join(root, 'receipts'),
      now: () => NOW,
    });
    expect(summary).toEqual({
      answers: 2,
      answers_without_usage: 1,
      tokens_in: 4100,
      tokens_out: 42,
      summariser_tokens_in: 9000,
      summariser_tokens_out: 300,
      window: '7d',
      compactions: 2,
      tokens_before: 18000,
      tokens_after: 4500,
      tokens_kept_out: 13500,
      pct_smaller: 75,
      oversized_spills: 1,
      summaries_reused: 1,
      recall_calls: 2,
      chars_returned: 3170,
    });
  });

  it('receipts hold numbers only and refuse text', async () => {
    const receipts = new Receipts({ receiptsDir: join(root, 'receipts'), replica: 'r1', now: () => NOW });
    const sneaky = { kind: 'recall_call', hits: 1, chars_returned: 2, query: 'secret' } as never;
    await expect(receipts.record(sneaky)).rejects.toThrow();
    await new Receipts({ receiptsDir: null, replica: 'r1' }).record({
      kind: 'span_opened',
      chars_returned: 5,
    });
    await receipts.record({ kind: 'span_opened', chars_returned: 5 });
    const text = readFileSync(join(root, 'receipts', 'r1-20261101.jsonl'), 'utf8');
    expect(JSON.parse(text)).toEqual({ ts: NOW.toISOString(), kind: 'span_opened', chars_returned: 5 });
  });

  it('receipts summary counts spans, bytes, seal status and read-back share', async () => {
    const spanDir = join(root, 'spans');
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'r1' });
    const at = new Date();
    for (let i = 0; i < 2; i += 1) {
      await archive.write({
        kind: 'compaction',
        sessionHash: 'c'.repeat(64),
        route: 'chat',
        model: 'm',
        messages: [{ role: 'user', content: 'x'.repeat(500) }],
        firstIndex: 0,
        summary: 's',
        at,
      });
    }
    const receipts = new Receipts({ receiptsDir: join(root, 'receipts'), replica: 'r1' });
    await receipts.record({ kind: 'compaction', tokens_before: 9000, tokens_after: 1000 });
    await receipts.record({ kind: 'recall_call', hits: 1, chars_returned: 100 });
    await receipts.record({ kind: 'span_opened', chars_returned: 400 });
    const summary = await receiptsSummary({ since: '24h', spanDir, receiptsDir: join(root, 'receipts') });
    expect(summary).toMatchObject({
      compactions: 1,
      tokens_kept_out: 8000,
      spans_archived: 2,
      sealed: true,
      runs_broken: 0,
      recall_calls: 1,
      spans_opened: 1,
      chars_returned: 500,
    });
    expect(summary.read_back_pct).toBeCloseTo((500 / summary.archive_bytes) * 100, 0);
  });

  it("takes a seal check's word on the runs it knows, and verifies only the others", async () => {
    const spanDir = join(root, 'spans');
    const write = (replica: string) =>
      new SealedArchive({ spanDir, keepSpans: 500, replica }).write({
        kind: 'compaction',
        sessionHash: 'c'.repeat(64),
        route: 'chat',
        model: 'm',
        messages: [{ role: 'user', content: 'the original words' }],
        firstIndex: 0,
        summary: 's',
        at: new Date(),
      });
    const known = await write('r1');
    const unknown = await write('r2');
    for (const ref of [known, unknown]) {
      const file = join(spanDir, ref.ref);
      writeFileSync(file, readFileSync(file, 'utf8').replace('original', 'ORIGINAL'));
    }
    const asked: string[] = [];
    const summary = await receiptsSummary({
      since: '24h',
      spanDir,
      receiptsDir: null,
      known: {
        verdictOf: (run) => {
          asked.push(run);
          return run === known.run ? { status: 'ok', lines: 1 } : undefined;
        },
      },
    });
    // The known run is taken as the check last found it (ok); the other one is verified here, and is broken.
    expect(asked.sort()).toEqual([known.run, unknown.run].sort());
    expect(summary).toMatchObject({ runs: 2, runs_broken: 1, sealed: true });
    const full = await receiptsSummary({ since: '24h', spanDir, receiptsDir: null });
    expect(full).toMatchObject({ runs: 2, runs_broken: 2 });
  });
});
