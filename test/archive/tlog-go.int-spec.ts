import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SpanLog, logFolder, spanEntry } from '@guardian/archive';

import { runChecker, tlogChecker } from './go-checker';

// Issue 29 "Done when": Go's reference packages (golang.org/x/mod/sumdb/note and tlog) accept what our code wrote.
describe('a span log, checked by golang.org/x/mod/sumdb', () => {
  let root: string;
  let dir: string;
  let vkey: string;
  let earlier: string;

  beforeAll(async () => {
    tlogChecker();
    root = mkdtempSync(join(tmpdir(), 'tlog-go-'));
    dir = logFolder(join(root, 'spans'), 'w1');
    const log = await SpanLog.open({ dir, origin: 'context-guardian.test/w1', seed: Buffer.alloc(32, 3) });
    vkey = log.verifierKey;
    const entries = Array.from({ length: 300 }, (_v, i) =>
      spanEntry(`run-${i % 7}`, i + 1, Buffer.from(`span ${i}`)),
    );
    await log.append(entries.slice(0, 10));
    earlier = join(root, 'checkpoint-10');
    writeFileSync(earlier, readFileSync(join(dir, 'checkpoint')));
    // Past one full tile (256), so a full tile, a partial one, a level-1 tile and a full entry bundle are all read.
    await log.append(entries.slice(10));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('verifies the signature, every entry through the tiles, and consistency with an earlier checkpoint', () => {
    expect(runChecker(dir, vkey, earlier)).toEqual({
      ok: true,
      out: 'ok context-guardian.test/w1 size 300 entries 300 consistent with 10',
    });
  });

  function tampered(rel: string, at: (bytes: Buffer) => number): { ok: boolean; out: string } {
    const copy = join(root, `copy-${rel.replace(/\W/g, '_')}`);
    cpSync(dir, copy, { recursive: true });
    const file = join(copy, rel);
    const bytes = readFileSync(file);
    const i = at(bytes);
    bytes[i] = (bytes[i] ?? 0) ^ 0x01;
    writeFileSync(file, bytes);
    return runChecker(copy, vkey, earlier);
  }

  it.each([
    ['a byte of a full tile', 'tile/0/000', () => 100],
    ['a byte of a partial tile', 'tile/0/001.p/44', () => 40],
    ['a byte of the level-1 tile', 'tile/1/000.p/1', () => 3],
    ['a byte of an entry', 'tile/entries/000', () => 30],
    ['a byte of the newest entry', 'tile/entries/001.p/44', (b: Buffer) => b.length - 2],
    ['a byte of the signature', 'checkpoint', (b: Buffer) => b.length - 6],
    ['a byte of the root', 'checkpoint', (b: Buffer) => b.indexOf('\n300\n') + 6],
  ])('fails when %s changes', (_what, rel, at) => {
    const res = tampered(rel, at);
    expect(res.ok).toBe(false);
    expect(res.out).toMatch(/^fail: /);
  });

  it('fails when the earlier checkpoint is not a prefix of the current tree', async () => {
    const other = join(root, 'other');
    const log = await SpanLog.open({
      dir: other,
      origin: 'context-guardian.test/w1',
      seed: Buffer.alloc(32, 3),
    });
    await log.append(Array.from({ length: 10 }, (_v, i) => `another history ${i}`));
    const res = runChecker(dir, vkey, join(other, 'checkpoint'));
    expect(res.ok).toBe(false);
  });
});
