import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { ArchiveError } from './archive-error';
import { CHAIN_FILE, assertRunId, runDir } from './archive-paths';
import { GENESIS_PREV } from './chain-line';
import { checkLine } from './chain-reader';
import { isErrno } from './durable-fs';
import type { SealedHead } from './run-writer';
import type { ChainBreak } from './chain-break';

/** How far a run has been verified: its first `seq` lines (`bytes` bytes of chain.jsonl), ending in `head`. */
export type VerifyCursor = SealedHead;

/** The outcome of one increment: the new cursor, or the first break found past the old one. */
export interface IncrementVerdict {
  cursor: VerifyCursor;
  break: ChainBreak | null;
  /** Lines checked in this increment. */
  lines: number;
}

async function readRange(file: string, from: number, to: number): Promise<string> {
  const handle = await fsp.open(file, 'r');
  try {
    const buffer = Buffer.alloc(to - from);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, from);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

async function sha256Of(file: string): Promise<string | null> {
  try {
    return createHash('sha256')
      .update(await fsp.readFile(file))
      .digest('hex');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return null;
    throw err;
  }
}

/** Whether a prune line anywhere in the run's current chain names `file` (pruned after the head was taken). */
async function prunedLater(dir: string, file: string): Promise<boolean> {
  const text = await fsp.readFile(path.join(dir, CHAIN_FILE), 'utf8');
  return text.split('\n').some((l, i) => {
    const entry = checkLine(l, i + 1);
    return entry.ok && entry.line.kind === 'prune' && (entry.line.files ?? []).includes(file);
  });
}

/**
 * Verifies the lines a live writer sealed since `from` (the whole chain when `from` is undefined), up to `to`, which
 * is a head that writer reported: seq continuity, each line's hash and link, and the sha256 of each file the new lines
 * seal. It reads nothing past `to`, so a span still being written is never mistaken for a torn tail (issue 12
 * defect 3). Files sealed before `from` are not re-read: the periodic full `verifyRun` covers them.
 */
export async function verifyIncrement(opts: {
  spanDir: string;
  from: VerifyCursor | undefined;
  to: SealedHead;
}): Promise<IncrementVerdict> {
  const run = assertRunId(opts.to.run);
  const dir = runDir(opts.spanDir, run);
  const start = opts.from ?? { run, seq: 0, head: GENESIS_PREV, bytes: 0 };
  if (opts.to.bytes <= start.bytes) return { cursor: start, break: null, lines: 0 };
  let text: string;
  try {
    text = await readRange(path.join(dir, CHAIN_FILE), start.bytes, opts.to.bytes);
  } catch (err) {
    if (isErrno(err, 'ENOENT'))
      throw new ArchiveError('ARCHIVE_NOT_FOUND', `run ${run} or its chain is gone`, { cause: err });
    throw err;
  }
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : [text];
  let { seq, head } = start;
  const broken = (b: Omit<ChainBreak, 'seq'> & { seq?: number }): IncrementVerdict => ({
    cursor: { run, seq, head, bytes: start.bytes },
    break: { seq: b.seq ?? seq + 1, ...b },
    lines: lines.length,
  });
  for (const textLine of lines) {
    const entry = checkLine(textLine, seq + 1);
    if (!entry.ok)
      return broken({ kind: 'entry-edited', file: null, detail: `chain line ${seq + 1}: ${entry.reason}` });
    const line = entry.line;
    if (line.seq !== seq + 1)
      return broken({
        kind: 'entry-reordered',
        file: null,
        detail: `line ${seq + 1} carries seq ${line.seq}`,
      });
    if (line.prev !== head)
      return broken({
        kind: 'entry-edited',
        seq,
        file: null,
        detail: `line ${line.seq} does not chain to line ${seq}`,
      });
    if ((line.kind === 'span' || line.kind === 'journal') && line.file !== undefined) {
      const found = await sha256Of(path.join(dir, line.file));
      if (found === null && !(line.kind === 'span' && (await prunedLater(dir, line.file))))
        return broken({
          kind: 'file-missing',
          seq: line.seq,
          file: line.file,
          detail: `${line.file} is gone`,
        });
      if (found !== null && found !== line.sha256)
        return broken({
          kind: 'content-changed',
          seq: line.seq,
          file: line.file,
          detail: `${line.file} no longer matches the sha256 sealed at seq ${line.seq}`,
        });
    }
    seq = line.seq;
    head = line.hash;
  }
  if (seq !== opts.to.seq || head !== opts.to.head)
    return broken({
      kind: 'entry-edited',
      file: null,
      detail: `the chain does not end in the head its writer sealed`,
    });
  return { cursor: { run, seq, head, bytes: opts.to.bytes }, break: null, lines: lines.length };
}
