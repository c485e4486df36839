import { ArchiveError } from './archive-error';
import type { LogPin } from './log-pins';
import { parseVerifierKey, type NoteVerifier } from './signed-note';
import { CHECKPOINT_FILE, VKEY_FILE } from './span-log';
import { LogCheckFailed, peekCheckpoint, readEntries, readTile, type LogSource } from './span-log-read';
import { openCheckpoint, type Checkpoint } from './tlog-checkpoint';
import { leafHash, treeRoot, type Hash, type SubtreeHash } from './tlog-merkle';
import { TILE_WIDTH, perfectRoot, tileHashes, tilePath, tileWidth } from './tlog-tiles';

/** The kinds of break a log check names (docs/ARCHIVE_FORMAT.md#verifying-the-log), in the order they are checked. */
export type LogBreakKind =
  | 'log-missing'
  | 'log-signature'
  | 'log-rewritten'
  | 'log-rolled-back'
  | 'span-missing'
  | 'span-changed'
  | 'span-unlogged';

export interface LogBreak {
  kind: LogBreakKind;
  /** The entry's index in the log, when the break is tied to one. */
  entry: number | null;
  detail: string;
}

/** A log check that found a break; the verifiers turn it into the verdict's `break`. */
export class Broken extends Error {
  constructor(readonly brk: LogBreak) {
    super(brk.detail);
  }
}

export function fail(kind: LogBreakKind, detail: string, entry: number | null = null): never {
  throw new Broken({ kind, entry, detail });
}

/** The perfect subtrees of a list of leaf hashes: how the tree of every entry is hashed without its tiles. */
function leavesSubtree(leaves: readonly Hash[]): SubtreeHash {
  return (level, index) => perfectRoot(leaves.slice(index * 2 ** level, (index + 1) * 2 ** level));
}

/** A log's verifier key, trimmed, when it is one (log-signature otherwise): a log claimed with nothing logged yet. */
export function checkVerifierKey(vkeyBytes: Buffer | null): string {
  const vkey = (vkeyBytes?.toString('utf8') ?? '').trim();
  try {
    parseVerifierKey(vkey);
  } catch (err) {
    if (!ArchiveError.is(err, 'ARCHIVE_BAD_OPTION')) throw err;
    fail('log-signature', `the log has no usable verifier key (${err.message})`);
  }
  return vkey;
}

/** The log's key and checkpoint, checked against the pinned key (the first verify pins it). */
export async function openLog(
  src: LogSource,
  pin: LogPin | null,
): Promise<{ vkey: string; note: string; c: Checkpoint }> {
  const vkeyBytes = await src.read(VKEY_FILE);
  const noteBytes = await src.read(CHECKPOINT_FILE);
  if (noteBytes === null) fail('log-rewritten', 'the log has no checkpoint');
  const vkey = (vkeyBytes?.toString('utf8') ?? '').trim();
  if (pin !== null && vkey !== pin.vkey)
    fail('log-signature', 'the verifier key is not the one pinned when this log was first verified');
  let verifier: NoteVerifier;
  try {
    verifier = parseVerifierKey(vkey);
  } catch (err) {
    if (!ArchiveError.is(err, 'ARCHIVE_BAD_OPTION')) throw err;
    fail('log-signature', `the log has no usable verifier key (${err.message})`);
  }
  const note = noteBytes.toString('utf8');
  const c = openCheckpoint(note, verifier);
  if (c === null) fail('log-signature', 'the checkpoint is not signed by the log key under its origin');
  return { vkey, note, c };
}

/** Every hash tile of the tree must hold the hashes its leaves make: served proofs are made from them. */
async function checkTiles(src: LogSource, size: number, leaves: readonly Hash[]): Promise<void> {
  const sub = leavesSubtree(leaves);
  for (let level = 0; TILE_WIDTH ** level <= size; level += 1) {
    for (let n = 0; tileWidth(level, n, size) > 0; n += 1) {
      const width = tileWidth(level, n, size);
      const hashes = tileHashes(await readTile(src, level, n, width));
      const good =
        hashes?.length === width && hashes.every((h, i) => h.equals(sub(level * 8, n * TILE_WIDTH + i)));
      if (!good)
        fail('log-rewritten', `${tilePath(level, n, width)} does not hold the hashes of the entries`);
    }
  }
}

/** The leaf hashes as the level-0 hash tiles hold them: the tree of a reader who may not read the entries. */
async function tileLeaves(src: LogSource, size: number): Promise<Hash[]> {
  const leaves: Hash[] = [];
  for (let n = 0; tileWidth(0, n, size) > 0; n += 1) {
    const width = tileWidth(0, n, size);
    const hashes = tileHashes(await readTile(src, 0, n, width));
    if (hashes?.length !== width)
      fail('log-rewritten', `${tilePath(0, n, width)} does not hold ${width} hashes`);
    leaves.push(...hashes);
  }
  return leaves;
}

/**
 * The tree the checkpoint signs, checked through the tiles: from the entries (`entries: true`, which also returns
 * them) or, for a reader the entry bundles are not served to, from the level-0 hash tiles alone.
 */
export async function checkTree(
  src: LogSource,
  c: Checkpoint,
  opts: { entries: boolean },
): Promise<{ entries: string[] | null; leaves: Hash[] }> {
  try {
    const entries = opts.entries ? await readEntries(src, c.size) : null;
    const leaves = entries?.map((e) => leafHash(Buffer.from(e, 'utf8'))) ?? (await tileLeaves(src, c.size));
    if (!treeRoot(c.size, leavesSubtree(leaves)).equals(c.root))
      fail('log-rewritten', `the ${c.size} entries do not hash to the checkpoint's root`);
    await checkTiles(src, c.size, leaves);
    return { entries, leaves };
  } catch (err) {
    // A missing or short tile or bundle is a truncated log; an I/O failure is not a verdict and goes up.
    if (!(err instanceof LogCheckFailed)) throw err;
    fail('log-rewritten', err.message);
  }
}

/** The last verified checkpoint must be a prefix of this one (RFC 6962 consistency, here from every leaf). */
export function checkConsistent(pin: LogPin | null, c: Checkpoint, leaves: readonly Hash[]): number | null {
  if (pin === null) return null;
  const old = peekCheckpoint(pin.checkpoint);
  if (old === null) return null;
  if (old.size > c.size)
    fail('log-rolled-back', `the checkpoint has ${c.size} entries; ${old.size} were verified before`);
  if (!treeRoot(old.size, leavesSubtree(leaves)).equals(old.root))
    fail(
      'log-rolled-back',
      `the first ${old.size} entries are not the ones verified before: a rewritten history`,
    );
  return old.size;
}

/** The origin a verifier key names (`<origin>+<id>+<key>`), unverified: it only names the pin to compare with. */
export function peekOrigin(vkey: Buffer | null): string | null {
  const name = vkey?.toString('utf8').trim().split('+')[0];
  return name === undefined || name === '' ? null : name;
}
