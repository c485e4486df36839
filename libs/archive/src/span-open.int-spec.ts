import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { sha256Hex } from './canonical-json';
import { ownerHash } from './owners';
import { SealedArchive } from './sealed-archive';
import { openSpan, parseSpanRef } from './span-open';

describe('openSpan: a sealed span read back to rebuild its summary', () => {
  let spanDir: string;
  beforeEach(() => {
    spanDir = join(mkdtempSync(join(tmpdir(), 'span-open-')), 'spans');
  });
  afterEach(() => rmSync(join(spanDir, '..'), { recursive: true, force: true }));

  const write = (owner?: string) =>
    new SealedArchive({ spanDir, keepSpans: 100, replica: 'r1' }).write({
      kind: 'compaction',
      sessionHash: sha256Hex('s'),
      ...(owner ? { ownerHash: ownerHash(owner) } : {}),
      route: 'responses',
      model: 'm',
      messages: [{ role: 'user', content: 'Remember this: FACT-1.' }],
      firstIndex: 0,
      summary: 'the summary',
      at: new Date(),
    });

  it('reads the summary, route and messages; checks the bytes against a logged sha256; keeps to its scope', async () => {
    const ref = await write('ada');
    const sha256 = sha256Hex(readFileSync(join(spanDir, ref.ref)));
    const opened = await openSpan({ spanDir, ref: ref.ref, sha256, scope: { ownerHash: ownerHash('ada') } });
    expect(opened).toEqual({
      run: ref.run,
      span: ref.span,
      route: 'responses',
      summary: 'the summary',
      messages: [{ role: 'user', content: 'Remember this: FACT-1.' }],
    });
    await expect(
      openSpan({ spanDir, ref: ref.ref, scope: { ownerHash: ownerHash('bob') } }),
    ).rejects.toMatchObject({ code: 'ARCHIVE_NOT_FOUND' });
    appendFileSync(join(spanDir, ref.ref), ' ');
    await expect(openSpan({ spanDir, ref: ref.ref, sha256 })).rejects.toMatchObject({
      code: 'ARCHIVE_CHAIN_BROKEN',
    });
    await expect(openSpan({ spanDir, ref: `${ref.run}/0009.json` })).rejects.toMatchObject({
      code: 'ARCHIVE_NOT_FOUND',
    });
    await expect(openSpan({ spanDir, ref: '../x/0001.json' })).rejects.toMatchObject({
      code: 'ARCHIVE_BAD_ID',
    });
  });

  it('parses only the one name each span has', () => {
    expect(parseSpanRef('run-1/0001.json')).toEqual({ run: 'run-1', span: 1 });
    expect(parseSpanRef('run-1/10000.json')).toEqual({ run: 'run-1', span: 10000 });
    expect(parseSpanRef('run-1/00001.json')).toBeNull();
    expect(parseSpanRef('run-1/1.json')).toBeNull();
    expect(parseSpanRef('a/b/0001.json')).toBeNull();
  });
});
