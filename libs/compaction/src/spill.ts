import { tokensForChars } from './estimate';
import type { Counter, NeutralMessage } from './types';

/** The largest non-system plain-text message: the one a big-paste spill cuts. */
export function largestSpillable(messages: readonly NeutralMessage[]): number | undefined {
  let best: number | undefined;
  let bestChars = -1;
  messages.forEach((m, i) => {
    if (m.role === 'system' || !m.spillable) return;
    if (m.chars > bestChars) {
      best = i;
      bestChars = m.chars;
    }
  });
  return best;
}

export interface SpillCut {
  text: string;
  originalTokens: number;
  omittedTokens: number;
}

/**
 * Cuts one text to a head and a tail of about 2:1 that fit `roomTokens`, at line boundaries (a single line longer
 * than the room is cut by characters), with one pointer line between them in the seed's form.
 * `pointer` receives the omitted token count and returns the line.
 */
export function spillText(
  text: string,
  opts: {
    roomTokens: number;
    counter: Counter;
    pointer: (omittedTokens: number, originalTokens: number) => string;
  },
): SpillCut | undefined {
  const originalTokens = tokensForChars(text.length, opts.counter);
  // A message that fits is never cut (the seed).
  if (originalTokens <= opts.roomTokens) return undefined;
  // The pointer line and its two line breaks share the room; with omitted = original it has the most digits.
  const pointerChars = opts.pointer(originalTokens, originalTokens).length + 2;
  const roomChars =
    Math.floor((opts.roomTokens * opts.counter.charsPerToken) / opts.counter.factor) - pointerChars;
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
  return { text: `${joinedHead}${pointer}\n${tail}`, originalTokens, omittedTokens };
}

export function spillPointer(args: {
  position: number;
  originalTokens: number;
  ref: string | undefined;
  omittedTokens: number;
}): string {
  const where = args.ref ? `archived as ${args.ref}` : 'not archived yet';
  return `[context-guardian: message ${args.position} (${args.originalTokens} tokens) ${where} -- the middle ${args.omittedTokens} tokens are omitted; with the recall MCP server, search_spans/read_span open the full text]`;
}
