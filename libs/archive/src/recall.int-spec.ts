import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CaptureJournal } from './capture-journal';
import { reindex } from './maintenance';
import { listRuns, listSpans } from './archive-reader';
import { listDigests, readSpan } from './recall-read';
import { searchArchive } from './search';
import { SealedArchive } from './sealed-archive';
import { sha256Hex } from './canonical-json';

const ALICE = sha256Hex('alice-session');
const BOB = sha256Hex('bob-session');

describe('reading the archive', () => {
  let root: string;
  let spanDir: string;
  let aliceRun: string;
  let bobRun: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'recall-'));
    spanDir = join(root, 'spans');
    let t = Date.parse('2026-10-30T10:00:00Z');
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'rr', now: () => new Date(t) });
    const write = async (sessionHash: string, content: string, summary: string) => {
      t += 60_000;
      return archive.write({
        kind: 'compaction',
        sessionHash,
        route: 'chat',
        model: 'demo',
        messages: [
          { role: 'system', content: 'You are helpful.' },
          { role: 'user', content },
        ],
        firstIndex: 1,
        summary,
        at: new Date(t),
      });
    };
    aliceRun = (
      await write(
        ALICE,
        'We picked the blue green rollout for the migration.',
        'Rollout chosen. Details follow.',
      )
    ).run;
    await write(ALICE, 'The migration window is Sunday; green first.', 'Window fixed.');
    await write(ALICE, 'A long paste '.repeat(400), 'A long paste was archived.');
    bobRun = (await write(BOB, 'Bob talks about the blue migration plan too.', 'Bob plan.')).run;
    const journal = new CaptureJournal({ archive });
    await journal.record({
      sessionHash: BOB,
      messages: [{ role: 'user', content: 'journal mentions rollout once' }],
      at: new Date(t),
    });
    await journal.close();
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('ranks the whole phrase first, then most words, then newest', async () => {
    const { hits, total } = await searchArchive({ spanDir, term: 'blue green rollout' });
    expect(total).toBe(4);
    expect(hits[0]).toMatchObject({ ref: `${aliceRun}/0001.json`, phrase_match: true, words_matched: 3 });
    expect(
      hits
        .slice(1)
        .map((h) => h.ref)
        .sort(),
    ).toEqual([`${aliceRun}/0002.json`, `${bobRun}/0001.json`, `${bobRun}/journal`].sort());
    expect(hits.slice(1).every((h) => !h.phrase_match && h.words_matched === 1)).toBe(true);
    expect(hits[0]).toMatchObject({
      message_index: 1,
      role: 'user',
      snippet: expect.stringContaining('blue green rollout'),
    });
    // Among one-word hits the newest comes first.
    const rest = hits.slice(1).map((h) => h.created_at);
    expect([...rest].sort().reverse()).toEqual(rest);
  });

  it('filters by run and by session (hash, prefix or raw value)', async () => {
    expect((await searchArchive({ spanDir, term: 'migration', run: bobRun })).hits.map((h) => h.run)).toEqual(
      [bobRun],
    );
    for (const session of [BOB, BOB.slice(0, 8), 'bob-session']) {
      const { hits } = await searchArchive({ spanDir, term: 'migration', session });
      expect(hits.every((h) => h.run === bobRun)).toBe(true);
      expect(hits.length).toBeGreaterThan(0);
    }
  });

  it('finds nothing for words that are not there, and refuses a path as a run', async () => {
    expect((await searchArchive({ spanDir, term: 'kubernetes' })).hits).toEqual([]);
    await expect(searchArchive({ spanDir, term: 'x', run: '../..' })).rejects.toMatchObject({
      code: 'ARCHIVE_BAD_ID',
    });
  });

  it('reads a span verbatim, a range of it, and cuts long text with the start that reads on', async () => {
    const whole = await readSpan({ spanDir, run: aliceRun, index: 1 });
    expect(whole.text).toBe(
      'summary: Rollout chosen. Details follow.\n[0] system: You are helpful.\n[1] user: We picked the blue green rollout for the migration.\n',
    );
    expect(whole.messages[1]!.raw).toEqual({
      role: 'user',
      content: 'We picked the blue green rollout for the migration.',
    });
    const range = await readSpan({ spanDir, run: aliceRun, index: 1, start: 1, end: 1 });
    expect(range.text).toBe('[1] user: We picked the blue green rollout for the migration.\n');
    const cut = await readSpan({ spanDir, run: aliceRun, index: 3, maxChars: 100 });
    expect(cut).toMatchObject({ truncated: true, next_start: 1 });
    expect(cut.text.length).toBeLessThanOrEqual(100);
    const journal = await readSpan({ spanDir, run: bobRun, index: 0 });
    expect(journal.text).toBe('[0] user: journal mentions rollout once\n');
    await expect(readSpan({ spanDir, run: aliceRun, index: 99 })).rejects.toMatchObject({
      code: 'ARCHIVE_NOT_FOUND',
    });
  });

  it('lists digests newest first under a hard token cap, and from the spans when the index is gone', async () => {
    const all = await listDigests({ spanDir, max: 100, maxTokens: 4000 });
    expect(all.entries.map((e) => `${e.run}/${e.span}`)).toEqual([
      `${bobRun}/1`,
      `${aliceRun}/3`,
      `${aliceRun}/2`,
      `${aliceRun}/1`,
    ]);
    expect(all.entries[3]!.line).toMatch(
      new RegExp(`^${aliceRun}/0001 2026-10-30 10:01 ~\\d+t: Rollout chosen\\.`),
    );
    const capped = await listDigests({ spanDir, maxTokens: 60 });
    expect(capped.truncated).toBe(true);
    expect(Math.ceil((capped.text.length + capped.entries.length) / 3.5)).toBeLessThanOrEqual(60);
    unlinkSync(join(spanDir, aliceRun, 'index.jsonl'));
    const fallback = await listDigests({ spanDir, run: aliceRun, maxTokens: 4000 });
    expect(fallback.entries.map((e) => e.digest)).toEqual([
      'A long paste was archived.',
      'Window fixed.',
      'Rollout chosen.',
    ]);
    expect(await reindex({ spanDir, run: aliceRun })).toEqual({ runs: 1, spans: 3 });
  });

  it('lists runs and spans', async () => {
    const runs = await listRuns({ spanDir });
    expect(runs.map((r) => r.run).sort()).toEqual([aliceRun, bobRun].sort());
    expect(runs.find((r) => r.run === bobRun)).toMatchObject({
      session_hash: BOB,
      spans: 1,
      journal_segments: 1,
    });
    expect((await listSpans({ spanDir, run: aliceRun })).map((s) => s.file)).toEqual([
      '0001.json',
      '0002.json',
      '0003.json',
    ]);
    await expect(listRuns({ spanDir: join(root, 'nope') })).rejects.toMatchObject({
      code: 'ARCHIVE_NOT_FOUND',
    });
  });
});

describe('search with the span filters of the index', () => {
  let root: string;
  let spanDir: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'search-filter-'));
    spanDir = join(root, 'spans');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('finds what reading every span finds, and does not read the spans it rules out', async () => {
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'ff' });
    const words = ['deploy', 'schema', 'rollback', 'cluster', 'window', 'summary', 'latency', 'timeout'];
    const refs = [];
    for (let i = 0; i < 60; i++) {
      const text = Array.from({ length: 80 }, (_x, k) => words[(i * 7 + k * 3) % words.length]).join(' ');
      const content = i % 13 === 0 ? `${text} the Quartz flamingo` : text;
      refs.push(
        await archive.write({
          kind: 'compaction',
          sessionHash: sha256Hex(`s-${i % 3}`),
          route: 'chat',
          model: 'demo',
          messages: [{ role: 'user', content }],
          firstIndex: 1,
          summary: `Span ${i}.`,
          at: new Date(),
        }),
      );
    }
    const terms = ['quartz flamingo', 'flamingo', 'deploy quartz', 'qu', 'nothing-here', 'Span 7'];
    const filtered = await Promise.all(terms.map((term) => searchArchive({ spanDir, term, max: 500 })));
    expect(filtered[0]!.total).toBe(5);
    // Without the index every span is read: the same hits.
    const runs = [...new Set(refs.map((r) => r.run))];
    for (const run of runs) unlinkSync(join(spanDir, run, 'index.jsonl'));
    const unfiltered = await Promise.all(terms.map((term) => searchArchive({ spanDir, term, max: 500 })));
    expect(filtered).toEqual(unfiltered);
    // --reindex builds the filters again; a span they rule out is then not read at all, so a word written into
    // its file behind the writer's back is not found there (the index is derived data, trusted as such).
    await reindex({ spanDir });
    const plain = refs[1]!;
    writeFileSync(
      join(spanDir, plain.ref),
      JSON.stringify({ messages: [{ role: 'user', content: 'flamingo' }] }),
    );
    expect(
      (await searchArchive({ spanDir, term: 'flamingo', max: 500 })).hits.map((h) => h.ref),
    ).not.toContain(plain.ref);
  });
});
