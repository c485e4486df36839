/**
 * Deterministic filler for long sessions: a seeded generator, so every run sends the same bytes and the numbers a
 * test derives (cuts, summariser calls) come out the same.
 */
const WORDS = [
  'parser',
  'schema',
  'handler',
  'migration',
  'fixture',
  'retry',
  'timeout',
  'queue',
  'request',
  'cache',
  'deploy',
  'config',
  'ledger',
  'cursor',
  'export',
  'token',
  'session',
  'window',
  'summary',
  'archive',
];

export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** About `words` words of prose in 12-word sentences, one per line. */
export function prose(seed: number, words: number): string {
  const rnd = seeded(seed * 7919 + 17);
  const lines: string[] = [];
  let line: string[] = [];
  for (let i = 0; i < words; i++) {
    line.push(WORDS[Math.floor(rnd() * WORDS.length)] ?? 'note');
    if (line.length === 12) {
      lines.push(`${line.join(' ')}.`);
      line = [];
    }
  }
  if (line.length) lines.push(`${line.join(' ')}.`);
  return lines.join('\n');
}

/** A source file's worth of lines, as a tool result would carry it. */
export function sourceFile(seed: number, lines: number): string {
  const rnd = seeded(seed * 104729 + 3);
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    const a = WORDS[Math.floor(rnd() * WORDS.length)] ?? 'x';
    const b = WORDS[Math.floor(rnd() * WORDS.length)] ?? 'y';
    out.push(`export function ${a}${i}(input: ${b}) { return check(input, '${a} ${b}'); }`);
  }
  return out.join('\n');
}
