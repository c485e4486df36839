import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { sha256Hex } from './canonical-json';
import { LogProofs } from './log-proofs';
import { SealedArchive } from './sealed-archive';
import { folderSource, listLogs, logFolder, readEntries, readLogState, tlogProofFor } from './span-log-read';
import { verifyTlogProof } from './tlog-checkpoint';
import { writerLog } from './writer-log';

function span(session: string, i: number) {
  return {
    kind: 'compaction' as const,
    sessionHash: sha256Hex(session),
    route: 'chat',
    model: 'm',
    messages: [{ role: 'user', content: `message ${i}` }],
    firstIndex: i,
    summary: `summary ${i}`,
    at: new Date(),
  };
}

describe('every sealed span becomes an entry of its writer log', () => {
  let spanDir: string;
  beforeEach(() => {
    spanDir = join(mkdtempSync(join(tmpdir(), 'span-log-archive-')), 'spans');
  });
  afterEach(() => rmSync(join(spanDir, '..'), { recursive: true, force: true }));

  it('appends one entry per span, in write order, under a checkpoint whose proofs verify', async () => {
    const archive = new SealedArchive({
      spanDir,
      keepSpans: 100,
      replica: 'r1',
      log: writerLog({ name: 'r1', originPrefix: 'test.example' }),
    });
    const refs = [];
    for (let i = 0; i < 5; i += 1) refs.push(await archive.write(span(i % 2 === 0 ? 'a' : 'b', i)));
    const state = (await readLogState(spanDir, 'r1'))!;
    expect(state.checkpoint).toMatchObject({ origin: 'test.example/r1', size: 5 });
    const entries = await readEntries(folderSource(state.dir), 5);
    expect(entries).toEqual(
      refs.map(
        (r) =>
          `context-guardian span ${r.run} ${r.span} sha256:${sha256Hex(readFileSync(join(spanDir, r.ref)))}`,
      ),
    );
    const bundle = await tlogProofFor(state, 3);
    expect(verifyTlogProof(bundle, entries[3]!, state.verifier)).toMatchObject({ ok: true });
    expect(archive.spanLog?.verifierKey).toBe(state.vkey);
  });

  it('gives each of several writers on one volume its own log, signed with the one volume key', async () => {
    const writers = ['r1', 'r2', 'r2-capture'].map(
      (name) =>
        new SealedArchive({
          spanDir,
          keepSpans: 100,
          replica: name,
          log: writerLog({ name, originPrefix: 'v' }),
        }),
    );
    await Promise.all(writers.flatMap((w, k) => [0, 1, 2].map((i) => w.write(span(`s${k}`, i)))));
    expect(await listLogs(spanDir)).toEqual(['r1', 'r2', 'r2-capture']);
    for (const name of ['r1', 'r2', 'r2-capture']) {
      const state = (await readLogState(spanDir, name))!;
      expect(state.checkpoint.size).toBe(3);
      const entries = await readEntries(folderSource(logFolder(spanDir, name)), 3);
      // Each log holds its own writer's spans only (the run names end in the writer's replica tag).
      expect(entries.every((e) => e.includes(`-${name} `))).toBe(true);
    }
  });
});

describe('a placed span is located in its log once `logged` settles (the native compaction handle, issue 29 item 4)', () => {
  let spanDir: string;
  beforeEach(() => {
    spanDir = join(mkdtempSync(join(tmpdir(), 'span-log-locate-')), 'spans');
  });
  afterEach(() => rmSync(join(spanDir, '..'), { recursive: true, force: true }));

  it('names the log, the entry and a checkpoint whose proof verifies, reading only what the log added since', async () => {
    const archive = new SealedArchive({
      spanDir,
      keepSpans: 1000,
      replica: 'r1',
      log: writerLog({ name: 'r1', originPrefix: 'test.example' }),
    });
    const proofs = new LogProofs(spanDir);
    // Past a full tile (256 entries), so the read goes on from a bundle boundary and a partial tile alike.
    for (const count of [3, 300, 2]) {
      const placed = [];
      for (let i = 0; i < count; i += 1) placed.push(await archive.place(span(`s${i % 7}`, i)));
      const last = placed.at(-1)!;
      await last.logged;
      const at = await proofs.locate(last);
      const state = (await readLogState(spanDir, 'r1'))!;
      expect(at).toEqual({
        log: 'r1',
        origin: 'test.example/r1',
        index: state.checkpoint.size - 1,
        size: state.checkpoint.size,
        root: state.checkpoint.root.toString('base64'),
        sha256: sha256Hex(readFileSync(join(spanDir, last.ref))),
      });
      const entry = `context-guardian span ${last.run} ${last.span} sha256:${at!.sha256}`;
      expect(verifyTlogProof(await tlogProofFor(state, at!.index), entry, state.verifier)).toMatchObject({
        ok: true,
      });
      // Every earlier span of this round is found at its own index too.
      const first = await proofs.locate(placed[0]!);
      expect(first?.index).toBe(state.checkpoint.size - count);
    }
    expect(await proofs.locate({ run: 'no-such-run', span: 1 })).toBeNull();
    await archive.close();
  });
});
