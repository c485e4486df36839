import { buildGrams } from './grams';
import { viewMessage } from './message-text';

/** One line of `<run>/index.jsonl` (docs/ARCHIVE_FORMAT.md §"Digest index"). */
export interface DigestLine {
  span: number;
  file: string;
  kind: string;
  created_at: string;
  tokens: number;
  digest: string;
  keywords: string[];
  /** The span's search filter (grams.ts), base64; absent for spans too long to filter and older index lines. */
  grams?: string;
}

/** Seed default GUARDIAN_CHARS_PER_TOKEN (ARCHITECTURE.md#configuration); the index only needs a size hint. */
const CHARS_PER_TOKEN = 3.5;
const DIGEST_MAX_CHARS = 160;
const MAX_KEYWORDS = 8;
/**
 * Keywords are counted over the first 256 KB of a span's text: enough to characterise it, and a 45 MB paste is not
 * turned into millions of word strings on the request path (issue 12: memory ~36 times the body).
 */
const KEYWORD_SCAN_CHARS = 256 * 1024;

export const STOPWORDS = new Set(
  (
    'about above after again against also because been before being below between both could does doing down ' +
    'during each from further have having here into itself just more most must only other over same should ' +
    'some such than that their them then there these they this those through under until very were what when ' +
    'where which while will with would your yours you the and for are but not'
  ).split(' '),
);

export function estimateTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** First sentence of a text, one line, at most 160 characters. */
function firstSentence(text: string): string {
  // The sentence is at most 160 characters, so only the start of a long text is looked at.
  const flat = text
    .slice(0, 64 * 1024)
    .replace(/\s+/g, ' ')
    .trim();
  const match = /^(.+?[.!?])(\s|$)/.exec(flat);
  const sentence = match?.[1] ?? flat;
  return sentence.length > DIGEST_MAX_CHARS ? `${sentence.slice(0, DIGEST_MAX_CHARS - 3)}...` : sentence;
}

/** Up to eight most frequent words of four or more letters, stopwords left out; ties keep first-seen order. */
export function keywords(text: string): string[] {
  const counts = new Map<string, number>();
  const sample = text.length > KEYWORD_SCAN_CHARS ? text.slice(0, KEYWORD_SCAN_CHARS) : text;
  // A word is a run of letters, digits, `_` and `-` that starts with no `-` and has four characters or more. Split
  // on everything else rather than matchAll: a match array per word was most of what writing an index line allocated.
  for (const run of sample.toLowerCase().split(/[^\p{L}\p{N}_-]+/u)) {
    const word = run.startsWith('-') ? run.replace(/^-+/, '') : run;
    if (word.length < 4 || STOPWORDS.has(word) || /^\d+$/.test(word)) continue;
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, MAX_KEYWORDS)
    .map(([word]) => word);
}

/** The digest line for a span, built from its summary (or its first message when there is none). */
export function buildDigest(span: {
  span: number;
  file: string;
  kind: string;
  created_at: string;
  summary: string | null;
  messages: unknown[];
  /** The span file's text: when given, its search filter is built from it. */
  fileText?: string;
}): DigestLine {
  const texts = span.messages.map((m) => viewMessage(m).text);
  const chars = texts.reduce((n, t) => n + t.length, Math.max(0, texts.length - 1));
  const lead = span.summary ?? texts.find((t) => t.trim() !== '') ?? '';
  // Only the start of the text is read for keywords: joined up to the scan limit, not whole.
  let sample = span.summary ?? '';
  for (const t of texts) {
    if (sample.length >= KEYWORD_SCAN_CHARS) break;
    sample += `\n${t.slice(0, KEYWORD_SCAN_CHARS)}`;
  }
  const line: DigestLine = {
    span: span.span,
    file: span.file,
    kind: span.kind,
    created_at: span.created_at,
    tokens: estimateTokens(chars),
    digest: firstSentence(lead),
    keywords: keywords(sample),
  };
  const grams = span.fileText === undefined ? undefined : buildGrams(span.fileText);
  if (grams !== undefined) line.grams = grams;
  return line;
}
