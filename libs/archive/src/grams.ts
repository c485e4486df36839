// The search filter of a span (docs/ARCHIVE_FORMAT.md §8, `grams`): a Bloom filter of the trigrams of its file's
// lowercased text, so a search skips the spans that cannot hold any of its words without reading them (ADR 0013).
// A search word is made of letters, digits and `_`; every three consecutive characters of it are three consecutive
// word characters of any text that holds it, so a span whose filter lacks one of a word's trigrams does not hold
// the word. The filter can say "maybe" wrongly, never "no" wrongly.

/** Character classes: 0 separates, 1-26 a-z, 27-36 0-9, 37 `_`, 38 any other code unit (accented letters...). */
const CLASSES = 39;
/** Spans with more text than this get no filter: a search reads them (a huge paste is not scanned at commit). */
export const GRAMS_MAX_CHARS = 4 * 1024 * 1024;
/** Bits per distinct trigram, and the filter's bounds in bits. */
const BITS_PER_GRAM = 4;
const MIN_BITS = 64;
const MAX_BITS = 16384;

function classOf(code: number): number {
  if (code >= 97 && code <= 122) return code - 96;
  if (code >= 48 && code <= 57) return code - 21;
  if (code === 95) return 37;
  return code >= 128 ? 38 : 0;
}

/** Bit of a trigram in a filter of `bits` (a power of two): Fibonacci hashing of its number. */
function bitOf(gram: number, log2bits: number): number {
  return Math.imul(gram, 0x9e3779b1) >>> (32 - log2bits);
}

/** Calls `fn` for every trigram of consecutive word characters in `lower` (already lowercased). */
function eachGram(lower: string, fn: (gram: number) => void): void {
  let a = 0;
  let b = 0;
  for (let i = 0; i < lower.length; i += 1) {
    const c = classOf(lower.charCodeAt(i));
    if (c !== 0 && a !== 0 && b !== 0) fn((a * CLASSES + b) * CLASSES + c);
    a = b;
    b = c;
  }
}

/** The filter of a text, base64; undefined when the text is too long to be filtered. */
export function buildGrams(text: string): string | undefined {
  if (text.length > GRAMS_MAX_CHARS) return undefined;
  const lower = text.toLowerCase();
  const seen = new Uint8Array(CLASSES * CLASSES * CLASSES);
  const grams: number[] = [];
  eachGram(lower, (g) => {
    if (seen[g] === 0) {
      seen[g] = 1;
      grams.push(g);
    }
  });
  let log2bits = 6;
  while (1 << log2bits < Math.min(MAX_BITS, Math.max(MIN_BITS, grams.length * BITS_PER_GRAM))) log2bits += 1;
  const bits = new Uint8Array((1 << log2bits) / 8);
  for (const g of grams) {
    const bit = bitOf(g, log2bits);
    bits[bit >>> 3]! |= 1 << (bit & 7);
  }
  return Buffer.from(bits).toString('base64');
}

/**
 * False only when the text the filter was built from holds none of `words` (lowercase words of letters, digits and
 * `_`): a word shorter than three characters has no trigram to look for, so it always may be there.
 */
export function mayHoldAny(filter: Buffer, words: readonly string[]): boolean {
  const log2bits = Math.log2(filter.length * 8);
  if (!Number.isInteger(log2bits) || log2bits < 6) return true;
  return words.some((word) => {
    let all = word.length >= 3;
    eachGram(word, (g) => {
      const bit = bitOf(g, log2bits);
      if (((filter[bit >>> 3] ?? 0) & (1 << (bit & 7))) === 0) all = false;
    });
    return all || word.length < 3;
  });
}
