import { tokensForChars } from './estimate';
import { RECALL_TOOLS } from './recall-tools';
import type { Counter } from './types';

export interface SpillCut {
  text: string;
  originalTokens: number;
  omittedTokens: number;
}

/** How a pinned sentence from the omitted middle of a spilled message is carried, after the pointer line. */
export const OMITTED_PIN_LABEL = '[context-guardian: pinned in the omitted part] ';

/**
 * Cuts one text to a head and a tail of about 2:1 that fit `roomTokens`, at line boundaries (a single line longer
 * than the room is cut by characters), with one pointer line between them in the seed's form.
 * `pointer` receives the omitted token count and returns the line. A sentence of `keep` (the user's pins in this
 * message) that the cut leaves out is carried verbatim after the pointer line: a spill never drops a pin.
 */
export function spillText(
  text: string,
  opts: {
    roomTokens: number;
    counter: Counter;
    pointer: (omittedTokens: number, originalTokens: number) => string;
    keep?: readonly string[];
  },
): SpillCut | undefined {
  const originalTokens = tokensForChars(text.length, opts.counter);
  // A message that fits is never cut (the seed).
  if (originalTokens <= opts.roomTokens) return undefined;
  const keep = opts.keep ?? [];
  // The pointer line and its two line breaks share the room; with omitted = original it has the most digits.
  // Pinned sentences are reserved in full: which of them the cut leaves out is known only after cutting.
  const reserved =
    opts.pointer(originalTokens, originalTokens).length +
    2 +
    keep.reduce((n, s) => n + OMITTED_PIN_LABEL.length + s.length + 1, 0);
  const roomChars =
    Math.floor((opts.roomTokens * opts.counter.charsPerToken) / opts.counter.factor) - reserved;
  if (roomChars <= 0) return undefined;
  const headChars = Math.floor((roomChars * 2) / 3);
  const tailChars = roomChars - headChars;
  let head = text.slice(0, headChars);
  const lastBreak = head.lastIndexOf('\n');
  if (lastBreak > headChars / 2) head = head.slice(0, lastBreak + 1);
  let tail = text.slice(text.length - tailChars);
  const firstBreak = tail.indexOf('\n');
  if (firstBreak !== -1 && firstBreak < tailChars / 2) tail = tail.slice(firstBreak + 1);
  const omittedTokens = Math.max(0, originalTokens - tokensForChars(head.length + tail.length, opts.counter));
  const pointer = opts.pointer(omittedTokens, originalTokens);
  const joinedHead = head.endsWith('\n') ? head : `${head}\n`;
  const carried = keep
    .filter((s) => !head.includes(s) && !tail.includes(s))
    .map((s) => `${OMITTED_PIN_LABEL}${s}\n`)
    .join('');
  return { text: `${joinedHead}${pointer}\n${carried}${tail}`, originalTokens, omittedTokens };
}

export function spillPointer(args: {
  position: number;
  originalTokens: number;
  ref: string | undefined;
  omittedTokens: number;
}): string {
  const where = args.ref ? `archived as ${args.ref}` : 'not archived yet';
  return `[context-guardian: message ${args.position} (${args.originalTokens} tokens) ${where} -- the middle ${args.omittedTokens} tokens are omitted; with the recall MCP server, ${RECALL_TOOLS.searchSpans}/${RECALL_TOOLS.readSpan} open the full text]`;
}

/**
 * The most characters a spill adds besides the head and tail: the pointer line with the largest numbers and a long
 * ref, and its two line breaks. The rebuild plans each spill's room with it, so a planned spill is never refused.
 */
export const POINTER_MAX_CHARS =
  spillPointer({
    position: 999_999,
    originalTokens: 99_999_999,
    ref: 'r'.repeat(80),
    omittedTokens: 99_999_999,
  }).length + 2;

/** Characters a spill of a message with these pins reserves besides its head and tail. */
export function spillReserveChars(pins: readonly string[]): number {
  return POINTER_MAX_CHARS + pins.reduce((n, p) => n + OMITTED_PIN_LABEL.length + p.length + 1, 0);
}
