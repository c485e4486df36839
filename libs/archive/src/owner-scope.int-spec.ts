import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CompactionLog } from './compaction-log';
import { LocalArchive } from './local-archive';
import { ownerHash, sessionHash } from './owners';
import { Receipts } from './receipts';
import { SealedArchive } from './sealed-archive';
import { allRuns, allSpans, sealAll } from './archive-source';

// Team mode (issue 15): one span folder holds every developer's runs; a scoped reader sees only its owner's, and a
// run of someone else's is answered exactly like a run that does not exist.

const NOW = new Date('2026-11-01T12:00:00Z');
const ALICE = ownerHash('alice');
const BOB = ownerHash('bob');

describe('an archive read in the scope of one owner', () => {
  let dataDir: string;
  let spanDir: string;
  const runs: Record<'alice' | 'bob' | 'nobody', string> = { alice: '', bob: '', nobody: '' };

  const archiveFor = (scope?: { ownerHash: string }, owner?: string): LocalArchive =>
    new LocalArchive({
      spanDir,
      anchorDir: null,
      logDir: join(dataDir, 'log'),
      receiptsDir: join(dataDir, 'receipts'),
      scope,
      sessionOwner: owner,
      receipts: new Receipts({ receiptsDir: join(dataDir, 'receipts'), replica: 'api1', now: () => NOW }),
      now: () => NOW,
    });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'cg-scope-'));
    spanDir = join(dataDir, 'spans');
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'own1', now: () => NOW });
    const write = async (who: 'alice' | 'bob' | 'nobody', text: string) => {
      const owner = who === 'nobody' ? undefined : who;
      const ref = await archive.write({
        kind: 'compaction',
        // The same header value, "laptop", for all three: only the owner tells the sessions apart.
        sessionHash: sessionHash('laptop', owner),
        ownerHash: owner === undefined ? undefined : ownerHash(owner),
        route: 'chat',
        model: 'demo',
        messages: [{ role: 'user', content: text }],
        firstIndex: 1,
        summary: 'S.',
        at: NOW,
      });
      runs[who] = ref.run;
    };
    await write('alice', 'alice plans the zebra migration');
    await write('alice', 'alice keeps the zebra notes');
    await write('bob', 'bob reviews the zebra budget');
    await write('nobody', 'an unowned zebra request');
    const log = new CompactionLog({ logDir: join(dataDir, 'log'), replica: 'own1', now: () => NOW });
    for (const [owner, before] of [
      [ALICE, 1000],
      [BOB, 5000],
    ] as const) {
      await log.append({
        run: null,
        span: null,
        session_hash: 'x'.repeat(64),
        owner_hash: owner,
        route: 'chat',
        model: 'demo',
        window: 8192,
        tokens_before: before,
        tokens_after: 100,
        count_source: 'estimate',
        evicted_messages: 4,
        summary_reused: false,
        summariser_calls: 1,
        chunked: false,
        oversized_spilled: 0,
        pins: 0,
        archive_deferred: false,
        dry_run: false,
      });
    }
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('keeps one run per (owner, session): one header value under three owners is three runs', () => {
    expect(new Set(Object.values(runs)).size).toBe(3);
    const meta = (run: string) => JSON.parse(readFileSync(join(spanDir, run, 'run.json'), 'utf8'));
    expect(meta(runs.alice).owner_hash).toBe(ALICE);
    expect(meta(runs.bob).owner_hash).toBe(BOB);
    expect(meta(runs.nobody).owner_hash).toBeNull();
  });

  it('lists, skims, searches and verifies only the owner’s runs; unscoped sees all', async () => {
    const alice = archiveFor({ ownerHash: ALICE }, 'alice');
    expect((await allRuns(alice)).map((r) => r.run)).toEqual([runs.alice]);
    expect((await allRuns(archiveFor())).map((r) => r.run).sort()).toEqual(Object.values(runs).sort());
    expect((await alice.digests({})).entries.map((e) => e.run)).toEqual([runs.alice, runs.alice]);
    const found = await alice.search({ term: 'zebra' });
    expect(found.hits.map((h) => h.snippet).sort()).toEqual([
      'alice keeps the zebra notes',
      'alice plans the zebra migration',
    ]);
    expect(found.complete).toBe(true);
    const sealed = await sealAll(alice);
    expect(sealed.runs.map((r) => [r.run, r.status])).toEqual([[runs.alice, 'ok']]);
    expect((await alice.heads()).map((h) => h.run)).toEqual([runs.alice]);
  });

  it('answers another owner’s run exactly like a missing one', async () => {
    const bob = archiveFor({ ownerHash: BOB }, 'bob');
    const refusals = [
      () => bob.spans(runs.alice),
      () => bob.readSpan({ run: runs.alice, index: 1 }),
      () => bob.digests({ run: runs.alice }),
      () => bob.search({ term: 'zebra', run: runs.alice }),
      () => bob.seal({ run: runs.alice }),
      () => bob.spans('20990101-000000-deadbeef-none'),
    ];
    for (const refused of refusals) {
      await expect(refused()).rejects.toMatchObject({ code: 'ARCHIVE_NOT_FOUND' });
    }
    await expect(bob.spans(runs.bob)).resolves.toMatchObject({ run: runs.bob, next: null });
    await expect(bob.readSpan({ run: '../x', index: 1 })).rejects.toMatchObject({ code: 'ARCHIVE_BAD_ID' });
  });

  it('matches a raw session value as the owner’s own session, never another owner’s', async () => {
    const alice = archiveFor({ ownerHash: ALICE }, 'alice');
    expect((await alice.search({ term: 'zebra', session: 'laptop' })).total).toBe(2);
    // Unscoped, the raw value names the unowned session only.
    const open = await archiveFor().search({ term: 'zebra', session: 'laptop' });
    expect(open.hits.map((h) => h.run)).toEqual([runs.nobody]);
  });

  it('pages runs and spans with a cursor until next is null', async () => {
    const all = archiveFor();
    const first = await all.runs({ limit: 2 });
    expect(first.runs).toHaveLength(2);
    expect(first.next).toBe(first.runs[1]!.run);
    const second = await all.runs({ after: first.next!, limit: 2 });
    expect(second).toMatchObject({ next: null });
    expect([...first.runs, ...second.runs].map((r) => r.run)).toEqual(
      (await all.runs()).runs.map((r) => r.run),
    );
    const spans = await all.spans(runs.alice, { limit: 1 });
    expect(spans).toMatchObject({ next: 1, spans: [{ span: 1 }] });
    expect((await allSpans(all, runs.alice)).map((s) => s.span)).toEqual([1, 2]);
    const sealPage = await all.seal({ limit: 1 });
    expect([sealPage.runs.length, sealPage.next]).toEqual([1, sealPage.runs[0]!.run]);
  });

  it('stops a search at its time limit and says the answer is partial', async () => {
    const bounded = new LocalArchive({
      spanDir,
      anchorDir: null,
      logDir: join(dataDir, 'log'),
      receiptsDir: null,
      searchTimeoutMs: 0,
    });
    const result = await bounded.search({ term: 'zebra' });
    expect(result.complete).toBe(false);
  });

  it('adds up savings and receipts for the owner only, and records the owner on recall receipts', async () => {
    const alice = archiveFor({ ownerHash: ALICE }, 'alice');
    expect(await alice.savings({ since: '7d' })).toMatchObject({ compactions: 1, tokens_before: 1000 });
    expect(await archiveFor().savings({ since: '7d' })).toMatchObject({
      compactions: 2,
      tokens_before: 6000,
    });
    const before = await alice.receipts({ since: '7d' });
    await alice.search({ term: 'zebra' });
    await alice.readSpan({ run: runs.alice, index: 1 });
    const receipts = await alice.receipts({ since: '7d' });
    expect(receipts).toMatchObject({ runs: 1, spans_archived: 2 });
    expect([
      receipts.recall_calls - before.recall_calls,
      receipts.spans_opened - before.spans_opened,
    ]).toEqual([1, 1]);
    const bobs = await archiveFor({ ownerHash: BOB }, 'bob').receipts({ since: '7d' });
    expect(bobs).toMatchObject({ runs: 1, spans_archived: 1, recall_calls: 0, spans_opened: 0 });
    const [file] = readdirSync(join(dataDir, 'receipts'));
    const lines = readFileSync(join(dataDir, 'receipts', file!), 'utf8')
      .trim()
      .split('\n');
    expect(lines.map((l) => JSON.parse(l).owner_hash)).toContain(ALICE);
  });
});
