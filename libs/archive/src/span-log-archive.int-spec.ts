import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { sha256Hex } from './canonical-json';
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
