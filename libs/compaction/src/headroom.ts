import { MESSAGE_OVERHEAD_CHARS, messageTokens, tokensForChars } from './estimate';
import { newestTyped, SPILL_PREVIEW_TOKENS } from './rebuild';
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
 * message were cut to its preview (ADR 0008 measure 3, weighed as the rebuild weighs it: the pointer at its longest
 * and the pins the message carries after it): what reusing the sticky cut with previews saves.
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
      SPILL_PREVIEW_TOKENS +
      tokensForChars(spillReserveChars(opts.pinsBy?.[i] ?? []) + MESSAGE_OVERHEAD_CHARS, counter);
    if (t >= PASTE_MIN_TOKENS) saved += t - preview;
  }
  return saved;
}
