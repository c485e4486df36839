import fc from 'fast-check';

import { buildGrams, GRAMS_MAX_CHARS, mayHoldAny } from './grams';

const WORD = /[\p{L}\p{N}_]+/gu;

/** The words a search would look for in `term` (search.ts). */
const wordsOf = (term: string) => [...new Set(term.toLowerCase().match(WORD) ?? [])];

describe('span search filters', () => {
  it('never rules out a word the text holds, whatever the text (JSON-encoded as a span file is)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 400 }), fc.nat(), fc.nat(), (text, a, b) => {
        const file = JSON.stringify({ messages: [{ role: 'user', content: text }] }, null, 2);
        const filter = Buffer.from(buildGrams(file)!, 'base64');
        // Any stretch of the text, as a search term: every word of it may be there.
        const from = a % (text.length + 1);
        const term = text.slice(from, from + (b % 40));
        for (const word of wordsOf(term))
          if (text.toLowerCase().includes(word)) expect(mayHoldAny(filter, [word])).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('rules out words the text does not hold, and keeps words too short to filter', () => {
    const filter = Buffer.from(
      buildGrams('The deploy schema rolled back; the cluster window held.')!,
      'base64',
    );
    expect(mayHoldAny(filter, ['quartz', 'flamingo'])).toBe(false);
    expect(mayHoldAny(filter, ['quartz', 'cluster'])).toBe(true);
    expect(mayHoldAny(filter, ['rolle'])).toBe(true);
    expect(mayHoldAny(filter, ['qz'])).toBe(true);
  });

  it('has no filter for a text too long to scan', () => {
    expect(buildGrams('x'.repeat(GRAMS_MAX_CHARS + 1))).toBeUndefined();
    expect(buildGrams('')).toBeDefined();
  });
});
