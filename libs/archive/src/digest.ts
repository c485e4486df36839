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
}

/** Seed default GUARDIAN_CHARS_PER_TOKEN (CONTRACTS §7); the index only needs a size hint. */
const CHARS_PER_TOKEN = 3.5;
const DIGEST_MAX_CHARS = 160;
const MAX_KEYWORDS = 8;

const STOPWORDS = new Set(
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
export function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const match = /^(.+?[.!?])(\s|$)/.exec(flat);
  const sentence = match?.[1] ?? flat;
  return sentence.length > DIGEST_MAX_CHARS ? `${sentence.slice(0, DIGEST_MAX_CHARS - 3)}...` : sentence;
}

/** Up to eight most frequent words of four or more letters, stopwords left out; ties keep first-seen order. */
export function keywords(text: string): string[] {
  const counts = new Map<string, number>();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}_][\p{L}\p{N}_-]{3,}/gu) ?? []) {
    if (STOPWORDS.has(word) || /^\d+$/.test(word)) continue;
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
}): DigestLine {
  const texts = span.messages.map((m) => viewMessage(m).text);
  const body = texts.join('\n');
  const lead = span.summary ?? texts.find((t) => t.trim() !== '') ?? '';
  return {
    span: span.span,
    file: span.file,
    kind: span.kind,
    created_at: span.created_at,
    tokens: estimateTokens(body.length),
    digest: firstSentence(lead),
    keywords: keywords(`${span.summary ?? ''}\n${body}`),
  };
}
