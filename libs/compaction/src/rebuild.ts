import { MESSAGE_OVERHEAD_CHARS, messageTokens, tokensForChars } from './estimate';
import { spillReserveChars } from './spill';
import type { Counter, NeutralMessage } from './types';

/** Characters the summary block costs beyond its text: the separator where it joins the client's system prompt. */
const BLOCK_OVERHEAD_CHARS = 16;
/**
 * What an older paste is cut to when the request must shrink: a head and a tail of about this many tokens in all,
 * plus the pointer. Fixed rather than "just enough", so the same paste is cut the same way on every later turn and
 * the backend's prefix cache still matches the request up to the newest message.
 */
export const SPILL_PREVIEW_TOKENS = 512;
/** Below this much room for head and tail a cut of the newest message would say nothing useful: it is left whole. */
export const MIN_SPILL_ROOM_TOKENS = 128;
/**
 * What an older paste is cut to when its preview is still too much: a head and a tail of the least useful room (its
 * first lines, where a person's question to the paste usually is, and its last), plus the pointer. Fixed, like the
 * preview; the rebuild takes it before it cuts the newest message, and the planner counts on it before it makes a
 * new cut (ADR 0021, amended): with Claude Code's own part filling three quarters of a 32,768 budget, a 512-token preview
 * beside the newest 17 KB paste was over by a few dozen tokens, and every turn cost a summary.
 */
export const SPILL_SHORT_PREVIEW_TOKENS = 128; // the same as MIN_SPILL_ROOM_TOKENS: the least useful room

export interface RebuildInput {
  messages: readonly NeutralMessage[];
  /** Characters every request carries outside the messages (tools, top-level system). */
  fixedChars: number;
  counter: Counter;
  /** Input budget in tokens. */
  budget: number;
  /**
   * The newest typed message is cut only when the request is over this: the whole budget where `budget` holds back a
   * margin for an unproven estimate. That margin is insurance against an undercount, paid by older messages (cut,
   * previewed), never by the message being asked, which an exact count would forward whole (issue 30 item 8); once
   * the newest must be cut, it is cut to `budget`. Absent: `budget`.
   */
  newestBudget?: number;
  /**
   * The most the request may take when the budget cannot be met because the client's own part (instructions,
   * tools) leaves the newest message no room under it: the window less the least room an answer needs
   * (answerCeiling). The newest message is then cut to fit this instead of being forwarded whole over the window
   * (issue 30 item 11). Absent: the budget is the only limit.
   */
  ceiling?: number;
  /** Messages before this index (system messages excepted) are evicted; 0 evicts nothing and places no block. */
  cut: number;
  /**
   * Renders the summary block carrying `pins`, `ledger` and `stated` (none when left out: the bare block). Required
   * when `cut` > 0.
   */
  renderBlock?: (pins: readonly string[], ledger: readonly string[], stated?: readonly string[]) => string;
  /** Pins the block may carry, in shedding order: the first is shed first (carriedPins). */
  pins: readonly string[];
  /** The instruction ledger the block may carry, in shedding order (carriedLedger); shed before any pin. */
  ledger?: readonly string[];
  /** The stated values the block may carry, in shedding order (statedValues); shed before the ledger. */
  stated?: readonly string[];
  /** The pins each message asks for (pinsByMessage): a spilled message carries them, and they take its room. */
  pinsBy?: readonly (readonly string[])[];
}

interface SpillOrder {
  index: number;
  /** Tokens the cut text (head, pointer, carried pins, tail) may take. */
  roomTokens: number;
  /** The newest message the user typed: cut only because it alone exceeds what is left. */
  newest: boolean;
}

export interface RebuildPlan {
  cut: number;
  /** Indexes of the client's items that are forwarded, in order. */
  keep: number[];
  block?: string;
  /** The pins the block carries (after any shedding). */
  pins: string[];
  /** The ledger entries the block carries (after any shedding). */
  ledger: string[];
  /** The stated values the block carries (after any shedding). */
  stated: string[];
  spills: SpillOrder[];
  /** Estimated tokens of the rebuilt request, each spilled message at its room (an upper bound). */
  tokens: number;
}

/** Tokens a summary block adds to a request. */
export function blockTokens(block: string | undefined, counter: Counter): number {
  return block === undefined ? 0 : tokensForChars(block.length + BLOCK_OVERHEAD_CHARS, counter);
}

/** The newest message the user typed at or after `from` (the one being asked), if any. */
export function newestTyped(messages: readonly NeutralMessage[], from: number): number | undefined {
  for (let i = messages.length - 1; i >= from; i--) {
    const m = messages[i];
    if (m?.role === 'user' && m.userTyped) return i;
  }
  return undefined;
}

/**
 * The rebuild around one cut (ARCHITECTURE.md#compaction, order of measures, after the planner chose the cut): keep
 * the system messages and the tail; place the block with every pin, ledger entry and stated value; while over budget,
 * cut older pastes to a preview, oldest first, then those previews to the short one, oldest first; then the newest
 * typed message, only when it alone exceeds what is left; then shed the stated values, the ledger, then the pins, each
 * oldest first, and only when the request fits without them (what the user said
 * is carried unless it is itself the excess: ADR 0008, ADR 0012).
 * Pure: the spills' archive writes and texts happen after, from `spills` (see {@link rebuiltTokens}).
 */
export function planRebuild(input: RebuildInput): RebuildPlan {
  const { messages, counter, budget, cut } = input;
  const keep: number[] = [];
  messages.forEach((m, i) => {
    if (m.role === 'system' || i >= cut) keep.push(i);
  });
  let body = tokensForChars(input.fixedChars, counter);
  for (const i of keep) body += messageTokens(messages[i]!, counter);
  let pins = [...input.pins];
  let ledger = [...(input.ledger ?? [])];
  let stated = [...(input.stated ?? [])];
  const render = (): string | undefined => (cut > 0 ? input.renderBlock?.(pins, ledger, stated) : undefined);
  let block = render();
  const total = (): number => body + blockTokens(block, counter);
  const overhead = tokensForChars(MESSAGE_OVERHEAD_CHARS, counter);
  const spills: SpillOrder[] = [];

  // What a spill of message i adds besides head and tail: the pointer and the pins it carries.
  const reserve = (i: number): number => tokensForChars(spillReserveChars(input.pinsBy?.[i] ?? []), counter);
  const newest = newestTyped(messages, cut);
  for (const i of keep) {
    if (total() <= budget) break;
    const m = messages[i]!;
    if (i === newest || m.role === 'system' || !m.spillable) continue;
    const t = messageTokens(m, counter);
    const room = SPILL_PREVIEW_TOKENS + reserve(i);
    if (t <= room + overhead) continue;
    spills.push({ index: i, roomTokens: room, newest: false });
    body -= t - (room + overhead);
  }
  // Still over with every older paste previewed: each preview gives way to the short one, oldest first, before the
  // newest message is cut (ADR 0021, amended).
  for (const s of spills) {
    if (total() <= budget) break;
    const room = SPILL_SHORT_PREVIEW_TOKENS + reserve(s.index);
    body -= s.roomTokens - room;
    s.roomTokens = room;
  }
  const m = newest === undefined ? undefined : messages[newest];
  // The newest message is cut only when the request is over the whole budget: an unproven estimate's margin is taken
  // from older messages, never from it (it would be forwarded whole on an exact count). Once it must be cut, it is
  // cut to the margined budget, so the request fits even where the estimate ran low (issue 30 item 8, ADR 0003).
  const newestCut = total() > Math.max(budget, input.newestBudget ?? budget);
  // Against the budget first; only where the fixed part leaves the newest message no useful room under the budget,
  // against the ceiling, so that what is forwarded still fits the window with room to answer.
  for (const limit of input.ceiling !== undefined && input.ceiling > budget
    ? [budget, input.ceiling]
    : [budget]) {
    if (!newestCut || newest === undefined || !m?.spillable || total() <= limit) break;
    const t = messageTokens(m, counter);
    const least = MIN_SPILL_ROOM_TOKENS + reserve(newest);
    // Worth cutting only if the room would reach the least useful once every pin is shed; the pins then go last,
    // and only as far as the budget needs. Where the fixed part alone nearly fills the limit, it stays whole.
    const bareBlock = block === undefined ? 0 : blockTokens(input.renderBlock?.([], []), counter);
    const roomBare = limit - (total() - blockTokens(block, counter) + bareBlock - t) - overhead;
    const room = Math.max(limit - (total() - t) - overhead, least);
    if (roomBare >= least && t > room + overhead) {
      spills.push({ index: newest, roomTokens: room, newest: true });
      body -= t - (room + overhead);
      break;
    }
  }
  // The stated values, the ledger, then the pins go last, and only when they are what stands between the request
  // and the budget: shedding them from a request that would not fit without any of them loses the user's words and
  // gains nothing.
  const bare = (): number => body + blockTokens(input.renderBlock?.([], []), counter);
  if (
    block !== undefined &&
    pins.length + ledger.length + stated.length > 0 &&
    total() > budget &&
    bare() <= budget
  ) {
    while (stated.length > 0 && total() > budget) {
      stated = stated.slice(1);
      block = render();
    }
    while (ledger.length > 0 && total() > budget) {
      ledger = ledger.slice(1);
      block = render();
    }
    while (pins.length > 0 && total() > budget) {
      pins = pins.slice(1);
      block = render();
    }
  }
  spills.sort((a, b) => a.index - b.index);
  return { cut, keep, block, pins, ledger, stated, spills, tokens: total() };
}

/** Tokens of the rebuilt request once the spilled texts are known (`replaced`: index -> the text forwarded). */
export function rebuiltTokens(
  input: Pick<RebuildInput, 'messages' | 'fixedChars' | 'counter'>,
  plan: Pick<RebuildPlan, 'keep' | 'block'>,
  replaced: ReadonlyMap<number, string>,
): number {
  let t = tokensForChars(input.fixedChars, input.counter) + blockTokens(plan.block, input.counter);
  for (const i of plan.keep) {
    const text = replaced.get(i);
    t +=
      text === undefined
        ? messageTokens(input.messages[i]!, input.counter)
        : tokensForChars(text.length + MESSAGE_OVERHEAD_CHARS, input.counter);
  }
  return t;
}

/**
 * Which rebuild goes out: the one around the cut, unless it is no smaller than what the client sent (a short stretch
 * replaced by a longer summary); then the spill alone when it helps; else nothing (ARCHITECTURE.md#compaction: the
 * forwarded request is never larger than what the client sent).
 */
export function chooseRebuild(
  requestTokens: number,
  withCut: RebuildPlan | undefined,
  spillOnly: () => RebuildPlan,
): RebuildPlan | undefined {
  if (withCut && withCut.cut > 0 && withCut.tokens < requestTokens) return withCut;
  const alone = spillOnly();
  return alone.spills.length > 0 && alone.tokens < requestTokens ? alone : undefined;
}
