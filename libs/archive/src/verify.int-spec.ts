import { mkdtempSync, readFileSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SealedArchive } from './sealed-archive';
import { repairRun, sealExisting } from './maintenance';
import { chainHeads, verifyArchive, verifyRun } from './verify';

const SESSION = 'a'.repeat(64);

async function writeSpans(
  spanDir: string,
  anchorDir: string | null,
  count: number,
  keepSpans = 500,
): Promise<string> {
  const archive = new SealedArchive({ spanDir, anchorDir, keepSpans, replica: 'r1' });
  let run = '';
  for (let i = 0; i < count; i += 1) {
    const ref = await archive.write({
      kind: 'compaction',
      sessionHash: SESSION,
      route: 'chat',
      model: 'demo',
      messages: [{ role: 'user', content: `message number ${i}` }],
      firstIndex: 1,
      summary: `Summary ${i}.`,
      at: new Date('2026-10-30T14:30:12Z'),
    });
    run = ref.run;
  }
  return run;
}

function chainLines(spanDir: string, run: string): string[] {
  return readFileSync(join(spanDir, run, 'chain.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '');
}

function writeChain(spanDir: string, run: string, lines: string[]): void {
  writeFileSync(join(spanDir, run, 'chain.jsonl'), lines.map((l) => `${l}\n`).join(''));
}

describe('verifyArchive on a real archive', () => {
  let root: string;
  let spanDir: string;
  let anchorDir: string;
  let run: string;

  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), 'verify-'));
    spanDir = join(root, 'spans');
    anchorDir = join(root, 'anchor');
    run = await writeSpans(spanDir, anchorDir, 3);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  async function breakOf(): Promise<{ kind: string; seq: number | null; file: string | null } | null> {
    const verdict = await verifyRun({ spanDir, anchorDir, run });
    return verdict.break === null
      ? null
      : { kind: verdict.break.kind, seq: verdict.break.seq, file: verdict.break.file };
  }

  it('reports OK for an untouched anchored run', async () => {
    const result = await verifyArchive({ spanDir, anchorDir });
    expect(result.ok).toBe(true);
    expect(result.runs).toEqual([
      expect.objectContaining({ run, status: 'ok', lines: 3, anchored: true, break: null }),
    ]);
  });

  it('content-changed: a span edited on disk', async () => {
    const file = join(spanDir, run, '0002.json');
    writeFileSync(file, readFileSync(file, 'utf8').replace('message number 1', 'message number X'));
    expect(await breakOf()).toEqual({ kind: 'content-changed', seq: 2, file: '0002.json' });
    expect((await verifyArchive({ spanDir, anchorDir })).ok).toBe(false);
  });

  it('file-missing: a span deleted without a prune record', async () => {
    unlinkSync(join(spanDir, run, '0001.json'));
    expect(await breakOf()).toEqual({ kind: 'file-missing', seq: 1, file: '0001.json' });
  });

  it('entry-edited: a chain line changed without rehashing', async () => {
    const lines = chainLines(spanDir, run);
    lines[1] = lines[1]!.replace(/"size":\d+/, '"size":1');
    writeChain(spanDir, run, lines);
    expect(await breakOf()).toEqual(expect.objectContaining({ kind: 'entry-edited', seq: 2 }));
  });

  it('entry-edited: a line rewritten and rehashed no longer chains to the next', async () => {
    const file = join(spanDir, run, '0001.json');
    writeFileSync(file, readFileSync(file, 'utf8').replace('message number 0', 'forged'));
    const { canonicalJson, sha256Hex } = await import('./canonical-json');
    const lines = chainLines(spanDir, run);
    const first = JSON.parse(lines[0]!);
    first.sha256 = sha256Hex(readFileSync(file));
    first.size = readFileSync(file).length;
    delete first.hash;
    first.hash = sha256Hex(canonicalJson(first));
    lines[0] = canonicalJson(first);
    writeChain(spanDir, run, lines);
    expect(await breakOf()).toEqual(expect.objectContaining({ kind: 'entry-edited', seq: 1 }));
  });

  it('entry-reordered: two chain lines swapped', async () => {
    const lines = chainLines(spanDir, run);
    writeChain(spanDir, run, [lines[0]!, lines[2]!, lines[1]!]);
    expect(await breakOf()).toEqual(expect.objectContaining({ kind: 'entry-reordered', seq: 3 }));
  });

  it('chain-forked: a second line claims the same predecessor', async () => {
    const lines = chainLines(spanDir, run);
    writeChain(spanDir, run, [...lines, lines[2]!]);
    expect(await breakOf()).toEqual(expect.objectContaining({ kind: 'chain-forked', seq: 3 }));
  });

  it('unsealed-file: a span file no chain line names', async () => {
    writeFileSync(join(spanDir, run, '0009.json'), '{"messages":[]}');
    expect(await breakOf()).toEqual({ kind: 'unsealed-file', seq: null, file: '0009.json' });
  });

  it('anchor-mismatch: a chain rewritten from the start no longer matches its anchor', async () => {
    // Rebuild the whole chain consistently with one span changed: only the anchor can tell.
    const file = join(spanDir, run, '0002.json');
    writeFileSync(file, readFileSync(file, 'utf8').replace('message number 1', 'rewritten'));
    rmSync(join(spanDir, run, 'chain.jsonl'));
    await sealExisting({ spanDir });
    expect((await verifyRun({ spanDir, run })).status).toBe('ok');
    expect(await breakOf()).toEqual(expect.objectContaining({ kind: 'anchor-mismatch' }));
  });

  it('anchor-mismatch: a chain cut shorter than its anchor', async () => {
    writeChain(spanDir, run, chainLines(spanDir, run).slice(0, 2));
    unlinkSync(join(spanDir, run, '0003.json'));
    expect(await breakOf()).toEqual(expect.objectContaining({ kind: 'anchor-mismatch', seq: 3 }));
  });

  it('chainHeads names the last line of each run', async () => {
    const last = JSON.parse(chainLines(spanDir, run)[2]!);
    expect(await chainHeads({ spanDir })).toEqual([{ run, seq: 3, head: last.hash, at: last.at }]);
  });
});

describe('pruning and repair', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'prune-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('keep-spans 0 keeps the newest span, writes prune records first, and verifies as pruned-ok', async () => {
    const spanDir = join(root, 'spans');
    const run = await writeSpans(spanDir, null, 4, 0);
    expect(readdirSync(join(spanDir, run)).filter((f) => f.endsWith('.json') && f !== 'run.json')).toEqual([
      '0004.json',
    ]);
    const kinds = chainLines(spanDir, run).map((l) => JSON.parse(l).kind);
    expect(kinds).toEqual(['span', 'span', 'prune', 'span', 'prune', 'span', 'prune']);
    expect(await verifyRun({ spanDir, run })).toEqual(
      expect.objectContaining({ status: 'pruned-ok', pruned: 3 }),
    );
  });

  it('repair refuses a run broken before its tail', async () => {
    const spanDir = join(root, 'spans');
    const run = await writeSpans(spanDir, null, 2);
    unlinkSync(join(spanDir, run, '0001.json'));
    await expect(repairRun({ spanDir, run })).rejects.toMatchObject({ code: 'ARCHIVE_CHAIN_BROKEN' });
  });

  it('repair seals a whole unsealed span and quarantines a torn one', async () => {
    const spanDir = join(root, 'spans');
    const run = await writeSpans(spanDir, null, 1);
    writeFileSync(join(spanDir, run, '0002.json'), '{"messages":[{"role":"user","content":"late"}]}');
    writeFileSync(join(spanDir, run, '0003.json'), '{"messages":[{"ro');
    const result = await repairRun({ spanDir, run });
    expect(result.actions).toEqual([
      { action: 'sealed', file: '0002.json' },
      { action: 'quarantined', file: '0003.json', to: 'quarantine/0003.json' },
    ]);
    expect((await verifyRun({ spanDir, run })).status).toBe('ok');
  });
});
