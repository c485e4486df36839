import { createHash } from 'node:crypto';

import fc from 'fast-check';

import { canonicalDigest, hashText, hashTexts, sortedKeyJson } from './prefix-hash';

/**
 * Sorted-key JSON written the plain way, independently of the writer under test: a digest keys the memo (and a memo
 * in Redis is shared by replicas of different versions during a rollout), so a faster writer must give the same bytes.
 */
function reference(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(reference).join(',')}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${keys.map((k) => `${JSON.stringify(k)}:${reference(o[k])}`).join(',')}}`;
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Any UTF-16 code unit: quotes, backslashes, control characters, lone and paired surrogates, and plain text. */
const unit = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'b', ' ', 'é', '字', '1', 'Z') },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('"', '\\', '\n', '\u0000', '\u001f', '\ud83d\ude00', '\ud800', '\udfff'),
  },
);
const text = fc.oneof(fc.string({ unit }), fc.string({ unit, minLength: 250, maxLength: 5000 }));
/** JSON-like values with the odd ones a parsed item never has but a digest must not trip on (undefined, -0). */
const value = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    text,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(tie('v'), { maxLength: 6 }),
    fc.dictionary(fc.oneof(text, fc.constantFrom('10', '9', 'a', 'B', '__proto__x')), tie('v'), {
      maxKeys: 6,
    }),
  ),
}));

describe('sorted-key JSON and its digest', () => {
  it('writes the same bytes as the plain sorted-key JSON, and the digest is their sha256', () => {
    fc.assert(
      fc.property(value.v, (v) => {
        const expected = reference(v);
        expect(sortedKeyJson(v)).toBe(expected);
        expect(canonicalDigest(v)).toBe(sha256(expected));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps key order out of the digest, integer-like keys included', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.oneof(text, fc.constantFrom('10', '9', '0')), text), (o) => {
        const reversed = Object.fromEntries(Object.entries(o).reverse());
        expect(canonicalDigest(reversed)).toBe(canonicalDigest(o));
      }),
    );
  });

  it('hashes a surrogate pair split across two parts as the joined string', () => {
    // Found by the property below in a CI run: each part alone encodes its lone half as U+FFFD.
    expect(hashTexts('a\ud83d', '\ude00b')).toBe(hashText('a\ud83d\ude00b'));
    expect(hashTexts('\ud83d', '', '\ude00')).toBe(hashText('\ud83d\ude00'));
  });

  it('hashes parts as the joined string would be hashed', () => {
    fc.assert(
      fc.property(fc.array(text, { maxLength: 6 }), (parts) => {
        expect(hashTexts(...parts)).toBe(hashText(parts.join('')));
      }),
    );
  });
});
