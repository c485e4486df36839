import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { isErrno } from './durable-fs';
import { CHECKPOINT_FILE, VKEY_FILE } from './span-log';
import { parseVerifierKey, splitNote, type NoteVerifier } from './signed-note';
import { formatTlogProof, openCheckpoint, parseCheckpoint, type Checkpoint } from './tlog-checkpoint';
import { consistencyProof, inclusionProof, type Hash } from './tlog-merkle';
import { TILE_WIDTH, decodeBundle, tilePath, withTiles } from './tlog-tiles';

/** The folder holding every writer's log on a span volume (docs/ARCHIVE_FORMAT.md#the-log). */
export function logsRoot(spanDir: string): string {
  return path.join(spanDir, '.tlog');
}

const LOG_NAME = /^[A-Za-z0-9_-]{1,80}$/;

/** A writer's log folder; throws on a name that is not a plain log name. */
export function logFolder(spanDir: string, name: string): string {
  if (!LOG_NAME.test(name)) throw new RangeError('a log name matches ^[A-Za-z0-9_-]{1,80}$');
  return path.join(logsRoot(spanDir), name);
}

/** The log names on a span volume (folders with a verifier key), sorted. */
export async function listLogs(spanDir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fsp.readdir(logsRoot(spanDir));
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw err;
  }
  return names.filter((n) => LOG_NAME.test(n)).sort();
}

/** Reads a file of a log, or null when it is absent. */
export async function readLogFile(dir: string, rel: string): Promise<Buffer | null> {
  try {
    return await fsp.readFile(path.join(dir, rel));
  } catch (err) {
    if (isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR')) return null;
    throw err;
  }
}

/**
 * Where a log's files are read from: its folder on the span volume, or (the recall CLI through a sidecar) the
 * sidecar's `/guardian/archive/logs/<name>/...`. `read` answers null for a file that is not there.
 */
export interface LogSource {
  name: string;
  read(rel: string): Promise<Buffer | null>;
}

/** A log's folder on the span volume as a {@link LogSource}. */
export function folderSource(dir: string): LogSource {
  return { name: path.basename(dir), read: (rel) => readLogFile(dir, rel) };
}

/** A log as it is on disk: its key, its newest checkpoint (signature checked) and its entries. */
export interface LogState {
  name: string;
  dir: string;
  verifier: NoteVerifier;
  vkey: string;
  note: string;
  checkpoint: Checkpoint;
}

/** The log's key and checkpoint; null when it has none yet; throws when the checkpoint is not signed by the key. */
export async function readLogState(spanDir: string, name: string): Promise<LogState | null> {
  const dir = logFolder(spanDir, name);
  const vkey = await readLogFile(dir, VKEY_FILE);
  const note = await readLogFile(dir, CHECKPOINT_FILE);
  if (vkey === null || note === null) return null;
  const verifier = parseVerifierKey(vkey.toString('utf8'));
  const text = note.toString('utf8');
  const checkpoint = openCheckpoint(text, verifier);
  if (checkpoint === null)
    throw new LogCheckFailed('checkpoint-signature', name, 'the checkpoint is not signed by the log key');
  return { name, dir, verifier, vkey: vkey.toString('utf8').trim(), note: text, checkpoint };
}

/** A log that does not check out, with the kind of break (verify maps it to a BreakKind). */
export class LogCheckFailed extends Error {
  constructor(
    readonly kind: 'checkpoint-signature' | 'log-tile' | 'log-rewritten',
    readonly log: string,
    message: string,
  ) {
    super(message);
  }
}

/** Reads one tile at the width a tree needs; a deleted partial is read as the prefix of its full tile. */
export async function readTile(
  src: LogSource,
  level: number | 'entries',
  n: number,
  width: number,
): Promise<Buffer> {
  const exact = await src.read(tilePath(level, n, width));
  if (exact !== null) return exact;
  const full = width < TILE_WIDTH ? await src.read(tilePath(level, n, TILE_WIDTH)) : null;
  if (full === null)
    throw new LogCheckFailed('log-tile', src.name, `tile ${tilePath(level, n, width)} is missing`);
  if (level === 'entries') {
    const entries = decodeBundle(full);
    if (entries === null) throw new LogCheckFailed('log-tile', src.name, 'an entry bundle is malformed');
    return Buffer.concat(entries.slice(0, width).flatMap((e) => [lengthPrefix(e.length), e]));
  }
  return full.subarray(0, width * 32);
}

function lengthPrefix(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}

/**
 * The entries of a tree of `size` from index `from` on (every entry by default), in order, from the entry bundles.
 * Entries never change once written, so a reader that has the first `from` reads only the bundles after them.
 */
export async function readEntries(src: LogSource, size: number, from = 0): Promise<string[]> {
  const out: string[] = [];
  for (let n = Math.floor(from / TILE_WIDTH); n * TILE_WIDTH < size; n += 1) {
    const width = Math.min(TILE_WIDTH, size - n * TILE_WIDTH);
    const entries = decodeBundle(await readTile(src, 'entries', n, width));
    if (entries?.length !== width) {
      throw new LogCheckFailed('log-tile', src.name, `entry bundle ${n} does not hold ${width} entries`);
    }
    const skip = Math.max(0, from - n * TILE_WIDTH);
    out.push(...entries.slice(skip).map((e) => e.toString('utf8')));
  }
  return out;
}

/** The inclusion proof of entry `index` in the tree of `size`, through the tiles. */
function proveInclusion(dir: string, index: number, size: number): Promise<Hash[]> {
  const src = folderSource(dir);
  return withTiles(
    size,
    (l, n, w) => readTile(src, l, n, w),
    (sub) => inclusionProof(index, size, sub),
  );
}

/** The consistency proof from the tree of `older` to the tree of `newer`, through the newer tree's tiles. */
export function proveConsistency(dir: string, older: number, newer: number): Promise<Hash[]> {
  const src = folderSource(dir);
  return withTiles(
    newer,
    (l, n, w) => readTile(src, l, n, w),
    (sub) => consistencyProof(older, newer, sub),
  );
}

/** The `c2sp.org/tlog-proof@v1` bundle of entry `index` against the log's newest checkpoint. */
export async function tlogProofFor(state: LogState, index: number): Promise<string> {
  const proof = await proveInclusion(state.dir, index, state.checkpoint.size);
  return formatTlogProof({ index, proof, checkpoint: state.note });
}

const SPAN_ENTRY = /^context-guardian span ([A-Za-z0-9_-]{1,80}) (0|[1-9]\d*) sha256:([0-9a-f]{64})$/;

/** Reads a span entry; null for any other text. */
export function parseSpanEntry(entry: string): { run: string; span: number; sha256: string } | null {
  const m = SPAN_ENTRY.exec(entry);
  return m === null ? null : { run: m[1]!, span: Number(m[2]), sha256: m[3]! };
}

/** Parses a checkpoint note without checking its signature (a rolled-back or foreign checkpoint is still read). */
export function peekCheckpoint(note: string): Checkpoint | null {
  const parts = splitNote(note);
  return parts === null ? null : parseCheckpoint(parts.text);
}
