import { createHash } from 'node:crypto';

/** A SHA-256 Merkle tree hash: 32 bytes. */
export type Hash = Buffer;

export const HASH_SIZE = 32;

/** RFC 6962 §2.1: a leaf is hashed with the 0x00 prefix, an interior node with 0x01. */
export function leafHash(entry: Uint8Array): Hash {
  return createHash('sha256').update(Buffer.of(0)).update(entry).digest();
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Hash {
  return createHash('sha256').update(Buffer.of(1)).update(left).update(right).digest();
}

/** RFC 6962 §2.1: the hash of the empty tree is SHA-256 of the empty string. */
export const EMPTY_ROOT: Hash = createHash('sha256').digest();

/**
 * The hash of the perfect subtree of height `level` (2^level leaves) numbered `index` at that height: it spans
 * leaves `[index * 2^level, (index + 1) * 2^level)`. Tiles store some of these; the rest are hashed from them.
 */
export type SubtreeHash = (level: number, index: number) => Hash;

/** The largest power of two smaller than n (n >= 2): RFC 6962's split point k. */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function log2(n: number): number {
  return Math.round(Math.log2(n));
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

/**
 * MTH(D[lo:hi]) (RFC 6962 §2.1) of a range that the RFC's recursion from D[0:n] reaches: every left part is a perfect
 * subtree at an aligned offset, so it is one SubtreeHash; only the right edge is hashed here.
 */
function rangeHash(lo: number, hi: number, sub: SubtreeHash): Hash {
  const n = hi - lo;
  if (n === 0) return EMPTY_ROOT;
  if (isPowerOfTwo(n) && lo % n === 0) return sub(log2(n), lo / n);
  const k = split(n);
  return nodeHash(rangeHash(lo, lo + k, sub), rangeHash(lo + k, hi, sub));
}

/** The root of a tree of `size` leaves. */
export function treeRoot(size: number, sub: SubtreeHash): Hash {
  return rangeHash(0, size, sub);
}

/** RFC 6962 §2.1.1 PATH(m, D[lo:hi]): the inclusion proof of leaf `index` in a tree of `size`, leaf's sibling first. */
export function inclusionProof(index: number, size: number, sub: SubtreeHash): Hash[] {
  if (!(index >= 0 && index < size)) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
  const path = (m: number, lo: number, hi: number): Hash[] => {
    const n = hi - lo;
    if (n === 1) return [];
    const k = split(n);
    return m < k
      ? [...path(m, lo, lo + k), rangeHash(lo + k, hi, sub)]
      : [...path(m - k, lo + k, hi), rangeHash(lo, lo + k, sub)];
  };
  return path(index, 0, size);
}

/** RFC 6962 §2.1.2 PROOF(m, D[n]): the consistency proof from a tree of `older` leaves to one of `newer`. */
export function consistencyProof(older: number, newer: number, sub: SubtreeHash): Hash[] {
  if (!(older >= 0 && older <= newer)) throw new RangeError(`cannot prove ${older} against ${newer}`);
  if (older === 0 || older === newer) return [];
  const subproof = (m: number, lo: number, hi: number, complete: boolean): Hash[] => {
    const n = hi - lo;
    if (m === n) return complete ? [] : [rangeHash(lo, hi, sub)];
    const k = split(n);
    return m <= k
      ? [...subproof(m, lo, lo + k, complete), rangeHash(lo + k, hi, sub)]
      : [...subproof(m - k, lo + k, hi, false), rangeHash(lo, lo + k, sub)];
  };
  return subproof(older, 0, newer, true);
}

/** RFC 9162 §2.1.3.2: the root an inclusion proof leads to, or null when the proof has the wrong length. */
function rootFromInclusion(index: number, size: number, leaf: Hash, proof: readonly Hash[]): Hash | null {
  if (!(index >= 0 && index < size)) return null;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

/** True when `proof` shows leaf `index` with hash `leaf` in the tree of `size` whose root is `root`. */
export function verifyInclusion(
  index: number,
  size: number,
  leaf: Hash,
  proof: readonly Hash[],
  root: Hash,
): boolean {
  const got = rootFromInclusion(index, size, leaf, proof);
  return got !== null && got.equals(root);
}

/** RFC 9162 §2.1.4.2: true when `proof` shows the tree (older, oldRoot) is a prefix of (newer, newRoot). */
export function verifyConsistency(
  older: number,
  newer: number,
  oldRoot: Hash,
  newRoot: Hash,
  proof: readonly Hash[],
): boolean {
  if (older > newer || older < 0) return false;
  if (older === newer) return proof.length === 0 && oldRoot.equals(newRoot);
  if (older === 0) return proof.length === 0;
  let path = [...proof];
  if (isPowerOfTwo(older)) path = [oldRoot, ...path];
  let fn = older - 1;
  let sn = newer - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  const [first, ...rest] = path;
  if (first === undefined) return false;
  let fr = first;
  let sr = first;
  for (const c of rest) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(oldRoot) && sr.equals(newRoot);
}
