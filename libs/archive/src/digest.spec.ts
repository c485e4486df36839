import fc from 'fast-check';

import { keywords, STOPWORDS } from './digest';

/** The rule as docs/ARCHIVE_FORMAT.md §8 states it, written the plain way: every match of the word pattern counted. */
function reference(text: string): string[] {
  const counts = new Map<string, number>();
  for (const [word] of text.toLowerCase().matchAll(/[\p{L}\p{N}_][\p{L}\p{N}_-]{3,}/gu)) {
    if (STOPWORDS.has(word) || /^\d+$/.test(word)) continue;
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([w]) => w);
}

describe('keywords', () => {
  it('are the most frequent words of four or more characters, as the pattern matches them', () => {
    const words = fc.constantFrom(
      'deploy',
      'x--abc',
      '--flag',
      'ab-c',
      '-abc',
      'état',
      '1234',
      'v2-rc',
      'a_b_c',
      'de',
      'x',
    );
    fc.assert(
      fc.property(
        fc.array(fc.oneof(words, fc.string()), { maxLength: 60 }),
        fc.constantFrom(' ', '\n', ', ', '.', '/'),
        (parts, sep) => {
          const text = parts.join(sep);
          expect(keywords(text)).toEqual(reference(text));
        },
      ),
      { numRuns: 500 },
    );
  });
});
