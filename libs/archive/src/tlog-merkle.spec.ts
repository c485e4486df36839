import { createHash } from 'node:crypto';

import {
  EMPTY_ROOT,
  consistencyProof,
  inclusionProof,
  leafHash,
  nodeHash,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
  type Hash,
} from './tlog-merkle';
import { perfectRoot, tileIndexPath, tilePath, parseTilePath, tileSubtree, tileWidth } from './tlog-tiles';

/** RFC 6962 §2.1 MTH, written straight from the definition, to hold the tiled version against. */
function mth(leaves: Hash[]): Hash {
  if (leaves.length === 0) return EMPTY_ROOT;
  if (leaves.length === 1) return leaves[0]!;
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

const leaves = Array.from({ length: 600 }, (_v, i) => leafHash(Buffer.from(`entry ${i}`)));

/** A SubtreeHash straight from the leaves. */
const direct = (height: number, index: number): Hash =>
  perfectRoot(leaves.slice(index * 2 ** height, (index + 1) * 2 ** height));

/** The same through level-0 and level-1 tiles built from the leaves, as the log stores them. */
function tiled(size: number) {
  const level1 = Array.from({ length: Math.floor(size / 256) }, (_v, n) =>
    perfectRoot(leaves.slice(n * 256, n * 256 + 256)),
  );
  return tileSubtree((level, n) => {
    const source = level === 0 ? leaves.slice(0, size) : level1;
    const w = tileWidth(level, n, size);
    return w === 0 ? null : source.slice(n * 256, n * 256 + w);
  });
}

describe('RFC 6962 hashing', () => {
  it('hashes a leaf with 0x00 and a node with 0x01 before the data', () => {
    expect(leafHash(Buffer.from('a')).toString('hex')).toBe(
      createHash('sha256')
        .update(Buffer.from([0, 0x61]))
        .digest('hex'),
    );
    expect(treeRoot(0, direct).toString('hex')).toBe(createHash('sha256').digest('hex'));
  });

  it.each([1, 2, 3, 7, 8, 255, 256, 257, 511, 512, 600])(
    'a tree of %i has the RFC root, tiled or not',
    (size) => {
      expect(treeRoot(size, direct).equals(mth(leaves.slice(0, size)))).toBe(true);
      expect(treeRoot(size, tiled(size)).equals(mth(leaves.slice(0, size)))).toBe(true);
    },
  );

  it('inclusion proofs verify for every leaf, and fail for another leaf or root', () => {
    for (const size of [1, 5, 256, 257, 600]) {
      const root = mth(leaves.slice(0, size));
      for (let i = 0; i < size; i += size > 10 ? 17 : 1) {
        const proof = inclusionProof(i, size, tiled(size));
        expect(verifyInclusion(i, size, leaves[i]!, proof, root)).toBe(true);
        expect(verifyInclusion(i, size, leaves[(i + 1) % 600]!, proof, root)).toBe(false);
        if (proof.length > 0) expect(verifyInclusion(i, size, leaves[i]!, proof.slice(1), root)).toBe(false);
      }
    }
  });

  it('consistency proofs verify between any two sizes, and fail for a changed old root', () => {
    for (const [m, n] of [
      [1, 2],
      [3, 7],
      [4, 8],
      [6, 8],
      [255, 256],
      [256, 257],
      [100, 600],
      [512, 600],
      [7, 7],
    ] as const) {
      const proof = consistencyProof(m, n, tiled(n));
      const oldRoot = mth(leaves.slice(0, m));
      const newRoot = mth(leaves.slice(0, n));
      expect(verifyConsistency(m, n, oldRoot, newRoot, proof)).toBe(true);
      expect(verifyConsistency(m, n, leaves[599]!, newRoot, proof)).toBe(false);
    }
  });
});

describe('C2SP tlog-tiles paths', () => {
  it('encodes the index as the spec does', () => {
    expect(tileIndexPath(1234067)).toBe('x001/x234/067');
    expect(tileIndexPath(5)).toBe('005');
    expect(tilePath(0, 1000, 7)).toBe('tile/0/x001/000.p/7');
    expect(tilePath('entries', 2, 256)).toBe('tile/entries/002');
    expect(parseTilePath('tile/1/x001/x234/067.p/12')).toEqual({ level: 1, n: 1234067, width: 12 });
    expect(parseTilePath('tile/0/../key')).toBeNull();
    expect(parseTilePath('tile/0/001.p/256')).toBeNull();
  });

  it('gives the widths the spec gives for a tree of 70,000', () => {
    expect(tileWidth(0, 273, 70_000)).toBe(112);
    expect(tileWidth(0, 272, 70_000)).toBe(256);
    expect(tileWidth(1, 1, 70_000)).toBe(17);
    expect(tileWidth(2, 0, 70_000)).toBe(1);
  });
});
