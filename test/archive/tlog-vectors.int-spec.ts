import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  LogProofs,
  SpanLog,
  logFolder,
  parseVerifierKey,
  spanEntry,
  verifyTlogProof,
} from '@guardian/archive';

import { runChecker } from './go-checker';
import { verifyLogsIndependently } from './independent-log-verifier';

// docs/ARCHIVE_FORMAT.md#test-vectors: every value there, made again here, and the checkpoint opened by Go's note.
const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'ARCHIVE_FORMAT.md'), 'utf8');

function block(name: string): string {
  const m = new RegExp('```text ' + name + '\\n([\\s\\S]*?)```').exec(doc);
  if (m?.[1] === undefined) throw new Error(`no ${name} block in ARCHIVE_FORMAT.md`);
  return m[1];
}

const vectors = Object.fromEntries(
  block('vectors')
    .trim()
    .split('\n')
    .map((l) => [l.slice(0, l.indexOf(': ')), l.slice(l.indexOf(': ') + 2)]),
) as Record<string, string>;

const SEED = Buffer.from(Array.from({ length: 32 }, (_v, i) => i));
const ORIGIN = 'example.com/context-guardian/r1';
const RUN = '20261101-120000-0123abcd-r1';

describe('the log test vectors of ARCHIVE_FORMAT.md', () => {
  let root: string;
  let spanDir: string;
  let entries: string[];

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'tlog-vectors-'));
    spanDir = join(root, 'spans');
    const log = await SpanLog.open({ dir: logFolder(spanDir, 'r1'), origin: ORIGIN, seed: SEED });
    entries = [1, 2, 3].map((i) => spanEntry(RUN, i, Buffer.from(`span ${i}\n`)));
    await log.append(entries);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('are what the library writes: key, entries, leaf hashes, root, signed checkpoint and proof bundle', async () => {
    const dir = logFolder(spanDir, 'r1');
    expect(readFileSync(join(dir, 'vkey'), 'utf8').trim()).toBe(vectors.vkey);
    entries.forEach((e, i) => {
      expect(e).toBe(vectors[`entry ${i}`]);
      const leaf = createHash('sha256').update(Buffer.of(0)).update(e).digest('hex');
      expect(leaf).toBe(vectors[`leaf ${i}`]);
    });
    const note = readFileSync(join(dir, 'checkpoint'), 'utf8');
    expect(note).toBe(block('checkpoint'));
    expect(note.split('\n')[2]).toBe(vectors.root);
    const [hit] = await new LogProofs(spanDir).attach([{ run: RUN, span: 2 }]);
    expect(hit!.log_proof).toBe(block('proof'));
    expect(
      verifyTlogProof(block('proof'), vectors['entry 1']!, parseVerifierKey(vectors.vkey!)),
    ).toMatchObject({
      ok: true,
      index: 1,
    });
  });

  it("are accepted by Go's golang.org/x/mod/sumdb: the documented note opens with the documented key", () => {
    // The checker opens the log's checkpoint and the "earlier" one with note.Open; the earlier is the doc's own text.
    const documented = join(root, 'documented-checkpoint');
    writeFileSync(documented, block('checkpoint'));
    expect(runChecker(logFolder(spanDir, 'r1'), vectors.vkey!, documented)).toEqual({
      ok: true,
      out: `ok ${ORIGIN} size 3 entries 3 consistent with 3`,
    });
  });

  it('are accepted by the independent verifier once the span files are there', async () => {
    const runDir = join(spanDir, RUN);
    mkdirSync(runDir, { recursive: true });
    for (const i of [1, 2, 3]) writeFileSync(join(runDir, `000${i}.json`), `span ${i}\n`);
    expect((await verifyLogsIndependently(spanDir)).logs).toEqual([
      expect.objectContaining({ log: 'r1', status: 'OK', checkpoint: block('checkpoint') }),
    ]);
  });
});
