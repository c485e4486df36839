import { readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CaptureJournal, SealedArchive, repairRun, sha256Hex } from '@guardian/archive';

import { verifyAllIndependently } from './independent-verifier';

// docs/ARCHIVE_FORMAT.md is the contract: a verifier written from it alone must agree with the writer.
describe('the independent verifier', () => {
  let root: string;
  let spanDir: string;
  let anchorDir: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'independent-'));
    spanDir = join(root, 'spans');
    anchorDir = join(root, 'anchor');
    const archive = new SealedArchive({
      spanDir,
      anchorDir,
      keepSpans: 2,
      replica: 'ind1',
      journalSegmentBytes: 200,
    });
    const journal = new CaptureJournal({ archive });
    const history: unknown[] = [];
    for (let i = 0; i < 5; i += 1) {
      history.push({ role: 'user', content: `turn ${i}: "quoted", tab\t, unicode é ✓, control \u0001` });
      await journal.record({ sessionHash: sha256Hex('s1'), messages: history, at: new Date() });
      await archive.write({
        kind: i === 0 ? 'compaction' : 'continuation',
        sessionHash: sha256Hex(i % 2 === 0 ? 's1' : 's2'),
        route: 'chat',
        model: 'demo',
        messages: history.slice(-1),
        firstIndex: i,
        summary: `Summary ${i} with "quotes" and é.`,
        at: new Date(),
      });
    }
    await archive.close();
    // A torn, then repaired, tail exercises repair records too.
    const run = readFileSync(join(spanDir, (await archive.runFor(sha256Hex('s2')))!, 'run.json'), 'utf8');
    const runId = JSON.parse(run).run as string;
    writeFileSync(join(spanDir, runId, '0099.json'), '{"messages":[]}');
    writeFileSync(join(spanDir, runId, '.0100.json.1.abcd.tmp'), 'partial');
    await repairRun({ spanDir, anchorDir, run: runId });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('accepts the archive the writer produced (spans, prunes, journals, repairs, anchors)', () => {
    const verdicts = verifyAllIndependently(spanDir, anchorDir);
    expect(verdicts).toHaveLength(2);
    expect(verdicts.map((v) => v.status).sort()).toEqual(['OK', 'pruned-ok']);
  });

  it('fails on a tampered span', () => {
    const verdicts = verifyAllIndependently(spanDir, anchorDir);
    const run = verdicts.find((v) => v.status === 'pruned-ok')!.run;
    const file = join(spanDir, run, '0003.json');
    writeFileSync(file, readFileSync(file, 'utf8').replace('turn 4', 'turn X'));
    expect(verifyAllIndependently(spanDir, anchorDir).find((v) => v.run === run)).toMatchObject({
      status: 'BREAK',
      kind: 'content-changed',
    });
  });
});
