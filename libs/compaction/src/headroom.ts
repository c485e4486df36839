import { allowedCuts } from './cuts';
import { MESSAGE_OVERHEAD_CHARS, messageTokens, tokensForChars } from './estimate';
import { newestTyped, SPILL_PREVIEW_TOKENS, SPILL_SHORT_PREVIEW_TOKENS } from './rebuild';
import { spillReserveChars } from './spill';
import type { Counter, NeutralMessage } from './types';

/**
 * The smallest message the planner counts as a paste worth previewing before it makes a new cut (ADR 0021): four
 * previews' worth, so turns of ordinary prose (the retention benches' ~740-token answers) are never previewed
 * instead of summarised; the 17 KB pastes of the works-with sessions (~4,900 tokens) are.
 */
export const PASTE_MIN_TOKENS = 4 * SPILL_PREVIEW_TOKENS;

/**
 * Tokens the rebuild's spill would take off the kept tail from `from` if every paste in it but the newest typed
 * message were cut to its short preview (ADR 0008 measure 3 and ADR 0021, weighed as the rebuild weighs it: the
 * pointer at its longest and the pins the message carries after it): what reusing the sticky cut with previews saves
 * at most. The rebuild takes the longer preview where that is enough.
 */
export function previewSavings(
  messages: readonly NeutralMessage[],
  from: number,
  opts: { counter: Counter; pinsBy?: readonly (readonly string[])[] },
): number {
  const { counter } = opts;
  const newest = newestTyped(messages, from);
  let saved = 0;
  for (let i = from; i < messages.length; i++) {
    const m = messages[i];
    if (!m || i === newest || m.role === 'system' || !m.spillable) continue;
    const t = messageTokens(m, counter);
    const preview =
      SPILL_SHORT_PREVIEW_TOKENS +
      tokensForChars(spillReserveChars(opts.pinsBy?.[i] ?? []) + MESSAGE_OVERHEAD_CHARS, counter);
    if (t >= PASTE_MIN_TOKENS) saved += t - preview;
  }
  return saved;
}

/**
 * The most the turns kept before the newest may take, their pastes cut to their short previews, where keeping them
 * is what lets the next cut be made ahead or spares a cut (ADR 0021, amended): a preview's worth of the newest
 * message's room.
 */
export const PREVIOUS_TURN_MAX_TOKENS = SPILL_PREVIEW_TOKENS;

interface TurnInput {
  messages: readonly NeutralMessage[];
  counter: Counter;
  allowed?: readonly boolean[];
  pinsBy?: readonly (readonly string[])[];
}

/** Where the newest turn starts: the last allowed cut (a person's message no tool call spans), if any. */
export function newestTurnStart(allowed: readonly boolean[], messages: number): number | undefined {
  for (let c = messages - 1; c > 0; c--) if (allowed[c]) return c;
  return undefined;
}

/**
 * Tokens of messages [start, end), system messages aside, with each message the rebuild may cut taken at its short
 * preview (the pointer at its longest, the pins it carries): the least the rebuild can make of them.
 */
export function shortenedTokens(input: TurnInput, start: number, end: number): number {
  const { messages, counter } = input;
  const overhead = tokensForChars(MESSAGE_OVERHEAD_CHARS, counter);
  let kept = 0;
  for (let i = start; i < end; i++) {
    const m = messages[i];
    if (!m || m.role === 'system') continue;
    const t = messageTokens(m, counter);
    const short =
      SPILL_SHORT_PREVIEW_TOKENS +
      tokensForChars(spillReserveChars(input.pinsBy?.[i] ?? []), counter) +
      overhead;
    kept += m.spillable && t > short ? short : t;
  }
  return kept;
}

/**
 * Where a new cut stops when the one chosen would keep only the newest turn (`cut` is the last allowed cut): at the
 * start of the turn before it, when that turn, shortened, takes at most PREVIOUS_TURN_MAX_TOKENS. That start is the
 * allowed cut before `cut`, or `from` when there is none after it (nothing new is evicted: the sticky cut is reused,
 * or, from 0, nothing is cut and the rebuild's spill does the rest). Otherwise `cut` itself.
 *
 * A cut that keeps only the newest turn evicts the answer to the request before it, which no request but this one
 * carries: no summary of it can be made ahead of the turn that needs it, so that turn waited on the summariser, and on
 * a window the client's own part nearly fills every turn did (issue 30 item 12). The turn before, kept and shortened,
 * costs the newest message at most that many tokens of room, and the next cut evicts only messages the request before
 * it held, which the background pre-compactor summarises ahead (ADR 0009).
 */
export function keepPreviousTurn(input: TurnInput, from: number, cut: number): number {
  const allowed = input.allowed ?? allowedCuts(input.messages);
  if (newestTurnStart(allowed, input.messages.length) !== cut) return cut;
  let start = from;
  for (let c = cut - 1; c > from; c--) {
    if (allowed[c]) {
      start = c;
      break;
    }
  }
  return shortenedTokens(input, start, cut) <= PREVIOUS_TURN_MAX_TOKENS ? start : cut;
}
