import { HASH_SIZE, nodeHash, type Hash, type SubtreeHash } from './tlog-merkle';

/** C2SP tlog-tiles: every tile is 8 levels of the tree, 256 hashes when full. */
const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;

/** `<N>` of a tile path: zero-padded 3-digit elements, all but the last prefixed `x` (1234067 -> x001/x234/067). */
export function tileIndexPath(n: number): string {
  let digits = String(n);
  digits = digits.padStart(Math.ceil(digits.length / 3) * 3, '0');
  const parts: string[] = [];
  for (let i = 0; i < digits.length; i += 3) parts.push(digits.slice(i, i + 3));
  return parts.map((p, i) => (i < parts.length - 1 ? `x${p}` : p)).join('/');
}

/** `tile/<L>/<N>[.p/<W>]`, or `tile/entries/<N>[.p/<W>]` for an entry bundle (level 'entries'). */
export function tilePath(level: number | 'entries', n: number, width: number): string {
  const suffix = width === TILE_WIDTH ? '' : `.p/${width}`;
  return `tile/${level}/${tileIndexPath(n)}${suffix}`;
}

const TILE_PATH = /^tile\/(0|[1-9]\d?|entries)\/((?:x\d{3}\/)*\d{3})(?:\.p\/([1-9]\d{0,2}))?$/;

/** Parses a tile path back to its level, index and width; null for anything else (no traversal can pass). */
export function parseTilePath(p: string): { level: number | 'entries'; n: number; width: number } | null {
  const m = TILE_PATH.exec(p);
  if (m === null) return null;
  const level = m[1] === 'entries' ? 'entries' : Number(m[1]);
  if (level !== 'entries' && level > 63) return null;
  const n = Number(m[2]!.replace(/x/g, '').replace(/\//g, ''));
  const width = m[3] === undefined ? TILE_WIDTH : Number(m[3]);
  if (width > 255 && m[3] !== undefined) return null;
  if (!Number.isSafeInteger(n)) return null;
  return { level, n, width };
}

/** The width of tile `n` at tile level `level` in a tree of `size` (0 when the tree does not reach it). */
export function tileWidth(level: number, n: number, size: number): number {
  const hashes = Math.floor(size / TILE_WIDTH ** level);
  return Math.max(0, Math.min(TILE_WIDTH, hashes - n * TILE_WIDTH));
}

/** The perfect-tree hash of `hashes` (a power-of-two count): how a tile's hashes make the levels between them. */
export function perfectRoot(hashes: readonly Hash[]): Hash {
  let level = [...hashes];
  while (level.length > 1) {
    const next: Hash[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(nodeHash(level[i]!, level[i + 1]!));
    level = next;
  }
  const [root] = level;
  if (root === undefined) throw new RangeError('no hashes');
  return root;
}

/** Splits a tile file into its hashes; null when its length is not a whole number of hashes. */
export function tileHashes(bytes: Buffer): Hash[] | null {
  if (bytes.length % HASH_SIZE !== 0) return null;
  const out: Hash[] = [];
  for (let i = 0; i < bytes.length; i += HASH_SIZE) out.push(bytes.subarray(i, i + HASH_SIZE));
  return out;
}

/**
 * A SubtreeHash over tiles: the subtree of height h is at tile level floor(h / 8), hashed from the 2^(h mod 8)
 * consecutive hashes there (C2SP tlog-tiles: "the levels between are reconstructed by hashing the leaves").
 * `tile(level, n)` returns the tile's hashes or null when it is not at hand.
 */
export function tileSubtree(tile: (level: number, n: number) => Hash[] | null): SubtreeHash {
  return (height, index) => {
    const level = Math.floor(height / TILE_HEIGHT);
    const count = 2 ** (height - level * TILE_HEIGHT);
    const first = index * count;
    const n = Math.floor(first / TILE_WIDTH);
    const hashes = tile(level, n);
    const offset = first - n * TILE_WIDTH;
    const slice = hashes?.slice(offset, offset + count);
    if (slice?.length !== count) throw new TileMissing(level, n);
    return perfectRoot(slice);
  };
}

/** Thrown by a tileSubtree when a tile is not loaded yet; `withTiles` loads it and tries again. */
class TileMissing extends Error {
  constructor(
    readonly level: number,
    readonly n: number,
  ) {
    super(`tile ${level}/${n} not loaded`);
  }
}

/**
 * Runs `compute` over the tiles of a tree of `size`, reading each tile it needs once through `read` (async). The
 * hashing is synchronous, so it is retried after each missing tile is read; a proof needs a handful of tiles.
 */
export async function withTiles<T>(
  size: number,
  read: (level: number, n: number, width: number) => Promise<Buffer>,
  compute: (sub: SubtreeHash) => T,
): Promise<T> {
  const loaded = new Map<string, Hash[]>();
  const sub = tileSubtree((level, n) => loaded.get(`${level}/${n}`) ?? null);
  for (;;) {
    try {
      return compute(sub);
    } catch (err) {
      if (!(err instanceof TileMissing)) throw err;
      const width = tileWidth(err.level, err.n, size);
      if (width === 0 || loaded.has(`${err.level}/${err.n}`)) throw err;
      const hashes = tileHashes(await read(err.level, err.n, width));
      if (hashes?.length !== width) throw new Error(`tile ${err.level}/${err.n} is not ${width} hashes wide`);
      loaded.set(`${err.level}/${err.n}`, hashes);
    }
  }
}

/** An entry bundle: each entry prefixed by its big-endian uint16 length (C2SP tlog-tiles "Log entries"). */
export function encodeBundle(entries: readonly Uint8Array[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    if (e.length > 0xffff) throw new RangeError('a log entry is at most 65535 bytes');
    const len = Buffer.alloc(2);
    len.writeUInt16BE(e.length);
    parts.push(len, Buffer.from(e));
  }
  return Buffer.concat(parts);
}

/** The entries of a bundle; null when a length runs past the end. */
export function decodeBundle(bytes: Buffer): Buffer[] | null {
  const out: Buffer[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (at + 2 > bytes.length) return null;
    const len = bytes.readUInt16BE(at);
    if (at + 2 + len > bytes.length) return null;
    out.push(bytes.subarray(at + 2, at + 2 + len));
    at += 2 + len;
  }
  return out;
}
