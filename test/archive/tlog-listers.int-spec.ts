import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  LocalArchive,
  SealedArchive,
  captureRuns,
  pruneRuns,
  reindex,
  sealExisting,
  sha256Hex,
  verifyLogs,
  writerLog,
} from '@guardian/archive';

import { verifyAllIndependently } from './independent-verifier';

// The writers' logs live in <span dir>/.tlog/, beside the runs: nothing that lists runs may take it for one, or
// search its files, or (worst) --prune or --seal-existing it.
describe('every lister of a span folder leaves .tlog/ alone', () => {
  let root: string;
  let spanDir: string;
  let run: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'tlog-listers-'));
    spanDir = join(root, 'spans');
    const archive = new SealedArchive({
      spanDir,
      keepSpans: 100,
      replica: 'l1',
      log: writerLog({ name: 'l1', originPrefix: 'needle.example' }),
    });
    for (let i = 0; i < 2; i += 1) {
      run = (
        await archive.write({
          kind: 'compaction',
          sessionHash: sha256Hex('s'),
          route: 'chat',
          model: 'm',
          messages: [{ role: 'user', content: `message ${i}` }],
          firstIndex: i,
          summary: 'sum',
          at: new Date(),
        })
      ).run;
    }
    await archive.close();
    expect(readdirSync(spanDir).sort()).toEqual(['.tlog', run]);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const local = () =>
    new LocalArchive({ spanDir, anchorDir: null, logDir: join(root, 'log'), receiptsDir: null });

  it('lists, searches, skims and verifies only the run', async () => {
    const archive = local();
    expect((await archive.runs()).runs.map((r) => r.run)).toEqual([run]);
    // The log's checkpoint and key name the origin: a search that read them would find it.
    expect((await archive.search({ term: 'needle.example' })).hits).toEqual([]);
    expect([...new Set((await archive.search({ term: 'message' })).hits.map((h) => h.run))]).toEqual([run]);
    expect((await archive.digests({})).entries.map((d) => d.run)).toEqual([run, run]);
    expect((await archive.seal({})).runs.map((r) => r.run)).toEqual([run]);
    expect((await archive.heads()).map((h) => h.run)).toEqual([run]);
    expect(await captureRuns(spanDir, sha256Hex('s'))).toEqual([run]);
    expect(verifyAllIndependently(spanDir).map((v) => v.run)).toEqual([run]);
  });

  it('seals, reindexes and prunes only runs: the log stays whole and verifies after', async () => {
    expect((await sealExisting({ spanDir })).runs).toEqual([]);
    expect(await reindex({ spanDir })).toEqual({ runs: 1, spans: 2 });
    const later = () => new Date(Date.now() + 3 * 86_400_000);
    expect((await pruneRuns({ spanDir, retentionDays: 1, now: later })).removed).toEqual([run]);
    expect(existsSync(join(spanDir, '.tlog', 'l1', 'checkpoint'))).toBe(true);
    expect(await verifyLogs({ spanDir, verifiedDir: null })).toMatchObject({
      ok: true,
      logs: [{ log: 'l1', status: 'pruned-ok', pruned: 2 }],
    });
  });
});
