import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadLogKey } from './log-key';
import { openNote, parseVerifierKey, signNote, noteSigner, verifierKey } from './signed-note';
import { SpanLog } from './span-log';
import {
  folderSource,
  logFolder,
  proveConsistency,
  readEntries,
  readLogState,
  tlogProofFor,
} from './span-log-read';
import { openCheckpoint, verifyTlogProof } from './tlog-checkpoint';
import { verifyConsistency } from './tlog-merkle';

describe('SpanLog (one writer transparency log on disk)', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'span-log-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('signs notes whose key ID is SHA-256(name || 0x0A || 0x01 || key)[:4], in the Go verifier key format', () => {
    const signer = noteSigner('example.com/log', Buffer.alloc(32, 7));
    const vkey = verifierKey(signer);
    expect(vkey).toMatch(/^example\.com\/log\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*$/);
    const note = signNote('hello\n', signer);
    expect(note).toMatch(/^hello\n\n\u2014 example\.com\/log [A-Za-z0-9+/]+=*\n$/);
    expect(openNote(note, parseVerifierKey(vkey))).toBe('hello\n');
    expect(openNote(note.replace('hello', 'hellp'), parseVerifierKey(vkey))).toBeNull();
    const other = parseVerifierKey(verifierKey(noteSigner('example.com/log', Buffer.alloc(32, 8))));
    expect(openNote(note, other)).toBeNull();
  });

  it('makes its key once (0600) and reads the same key at the next start', async () => {
    const file = join(root, 'keys', 'log.key');
    const a = await loadLogKey({ file, create: true, name: 'x' });
    const b = await loadLogKey({ file, create: true, name: 'x' });
    expect(a.equals(b)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await expect(loadLogKey({ file: join(root, 'absent'), create: false, name: 'x' })).rejects.toThrow(
      /cannot be read/,
    );
  });

  it('writes tiles and checkpoints that prove every entry and stay consistent across a restart', async () => {
    const dir = logFolder(root, 'w1');
    const seed = Buffer.alloc(32, 1);
    const log = await SpanLog.open({ dir, origin: 'test/w1', seed });
    const texts = Array.from(
      { length: 300 },
      (_v, i) => `context-guardian span r ${i + 1} sha256:${'a'.repeat(64)}`,
    );
    await log.append(texts.slice(0, 10));
    const first = await readLogState(root, 'w1');
    expect(first?.checkpoint.size).toBe(10);
    const again = await SpanLog.open({ dir, origin: 'test/w1', seed });
    await Promise.all([again.append(texts.slice(10, 200)), again.append(texts.slice(200))]);
    const state = (await readLogState(root, 'w1'))!;
    expect(state.checkpoint.size).toBe(300);
    expect(await readEntries(folderSource(dir), 300)).toEqual(texts);
    for (const i of [0, 9, 255, 256, 299]) {
      const bundle = await tlogProofFor(state, i);
      expect(verifyTlogProof(bundle, texts[i]!, state.verifier)).toMatchObject({ ok: true, index: i });
      expect(verifyTlogProof(bundle, `${texts[i]!}x`, state.verifier)).toMatchObject({ ok: false });
    }
    const proof = await proveConsistency(dir, 10, 300);
    expect(verifyConsistency(10, 300, first!.checkpoint.root, state.checkpoint.root, proof)).toBe(true);
  });

  it('refuses to carry on a log whose tiles or checkpoint were changed', async () => {
    const dir = logFolder(root, 'w2');
    const seed = Buffer.alloc(32, 2);
    const log = await SpanLog.open({ dir, origin: 'test/w2', seed });
    await log.append(['one', 'two', 'three']);
    const tile = join(dir, 'tile', '0', '000.p', '3');
    const bytes = readFileSync(tile);
    bytes[5] = (bytes[5] ?? 0) ^ 1;
    writeFileSync(tile, bytes);
    await expect(SpanLog.open({ dir, origin: 'test/w2', seed })).rejects.toMatchObject({
      code: 'ARCHIVE_CHAIN_BROKEN',
    });
    const note = readFileSync(join(dir, 'checkpoint'), 'utf8');
    expect(openCheckpoint(note.replace('\n3\n', '\n2\n'), parseVerifierKey(log.verifierKey))).toBeNull();
  });
});
