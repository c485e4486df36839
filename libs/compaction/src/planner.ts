import { allowedCuts } from './cuts';
import { messageTokens, tokensForChars } from './estimate';
import {
  keepPreviousTurn,
  newestTurnStart,
  PREVIOUS_TURN_MAX_TOKENS,
  previewSavings,
  shortenedTokens,
} from './headroom';
import type { BudgetInfo, Counter, KeepRecent, NeutralMessage } from './types';

/** The fewest messages a new cut keeps verbatim (ARCHITECTURE.md#compaction). */
export const MIN_KEPT_MESSAGES = 4;

export interface PlanInput {
  messages: readonly NeutralMessage[];
  /** Characters outside the messages that every request carries: the tools array, a top-level system prompt. */
  fixedChars: number;
  counter: Counter;
  budget: BudgetInfo;
  keep: KeepRecent;
  /** The whole request's tokens as counted (exactly, when the upstream tokenized it). */
  requestTokens: number;
  /** The conversation's memoized cut and the tokens its summary block takes, when the memo has one. */
  memo?: { cut: number; summaryTokens: number };
  /**
   * Tokens the summary block would take after a new cut at `cut`, with a summary as long as the summariser may
   * write (an upper bound: the summary is not written yet). Without it a new cut is never made deeper to fit.
   */
  newBlockTokens?: (cut: number) => number;
  /**
   * `allowedCuts(messages)`, when the caller has it already: one request is planned from chooseMemo, planCompaction and
   * chooseCut, and each needed it (issue 16). Without it, each computes its own.
   */
  allowed?: readonly boolean[];
  /** The pins each message asks for (pinsByMessage): a previewed paste carries them after its pointer. */
  pinsBy?: readonly (readonly string[])[];
}

export type Plan =
  /** Under budget: forward unchanged. */
  | { action: 'fits'; tokens: number }
  /**
   * Forward the memoized summary and the messages after its cut (no summariser call): it fits, or it is over budget
   * but no later cut exists, and the rebuild's spill and pin shedding take it from there.
   */
  | { action: 'reuse'; cut: number; tokens: number }
  /** Summarise messages [from, cut) (extending the memo's summary when from > 0). */
  | { action: 'compact'; from: number; cut: number }
  /** Over budget but no allowed cut evicts anything: only the big-paste spill can help. */
  | { action: 'no-cut'; tokens: number };

function tailTokens(messages: readonly NeutralMessage[], from: number, counter: Counter): number {
  let t = 0;
  for (let i = from; i < messages.length; i++) {
    const m = messages[i];
    if (m && m.role !== 'system') t += messageTokens(m, counter);
  }
  return t;
}

/** Tokens of the parts no cut removes: the fixed part and every system message. */
function keptSystemTokens(input: Pick<PlanInput, 'messages' | 'fixedChars' | 'counter'>): number {
  let t = tokensForChars(input.fixedChars, input.counter);
  for (const m of input.messages) if (m.role === 'system') t += messageTokens(m, input.counter);
  return t;
}

/** Tokens of a request after a cut, with a summary block of `summaryTokens` in front of the kept tail. */
export function tokensAfterCut(input: Omit<PlanInput, 'memo'>, cut: number, summaryTokens: number): number {
  return keptSystemTokens(input) + summaryTokens + tailTokens(input.messages, cut, input.counter);
}

/**
 * Which of a conversation's memoized cuts a request starts from (`memos` in any order): the earliest allowed one
 * whose block and tail fit the budget, so a later cut (one pre-computed in the background, issue 14) is taken only
 * when it is needed and the prefix stays as long as it can; else the latest allowed one, from which a new cut is made.
 */
export function chooseMemo<T extends { cut: number; summaryTokens: number }>(
  input: Omit<PlanInput, 'memo'>,
  memos: readonly T[],
): T | undefined {
  const allowed = input.allowed ?? allowedCuts(input.messages);
  const usable = memos
    .filter((m) => m.cut > 0 && m.cut < input.messages.length && allowed[m.cut] === true)
    .sort((a, b) => a.cut - b.cut);
  return (
    usable.find((m) => tokensAfterCut(input, m.cut, m.summaryTokens) <= input.budget.budget) ?? usable.at(-1)
  );
}

/**
 * Decides what to do with one request (ARCHITECTURE.md#compaction, order of measures): forward it as it is while it
 * fits; reuse the memoized (sticky) cut while its summary plus the kept tail fit; otherwise choose a new, later cut
 * that keeps about `keep.fraction` of (window - reserve) verbatim, at least MIN_KEPT_MESSAGES messages (or exactly
 * `keep.messages`), never splitting a tool call from its results. When that cut would not fit with its summary,
 * the minimum gives way: a deeper cut is taken before any paste is spilled.
 */
export function planCompaction(input: PlanInput): Plan {
  const { messages, budget, memo } = input;
  if (input.requestTokens <= budget.budget) return { action: 'fits', tokens: input.requestTokens };

  // A memoized cut that a later message made invalid (a result arriving after it for a call before it) is not reused:
  // tool pairs are never split, whatever the memo says.
  const usable =
    memo !== undefined &&
    memo.cut < messages.length &&
    (input.allowed ?? allowedCuts(messages))[memo.cut] === true;
  const from = usable ? memo.cut : 0;
  const reuseTokens = usable && from > 0 ? tokensAfterCut(input, from, memo.summaryTokens) : undefined;
  if (reuseTokens !== undefined && reuseTokens <= budget.budget)
    return { action: 'reuse', cut: from, tokens: reuseTokens };
  // Older pastes cut to their previews before a new cut, when that alone makes the sticky cut fit (ADR 0021): the
  // rebuild's spill does it, and the turn costs no summariser call.
  if (reuseTokens !== undefined && (input.keep.headroomTurns ?? 0) > 0) {
    const previewed = reuseTokens - previewSavings(messages, from, input);
    if (previewed <= budget.budget) return { action: 'reuse', cut: from, tokens: previewed };
  }

  // The newest turn does not fit beside the fixed part and the block as it stands: the rebuild cuts the newest message
  // whatever is cut before it. Then the sticky cut (or none) stands while the turns kept before the newest, shortened,
  // take at most a preview's worth of its room, and a cut serves two turns instead of one (ADR 0021, amended).
  if ((input.keep.headroomTurns ?? 0) > 0 && newestCutAnyway(input, from, reuseTokens, memo?.summaryTokens)) {
    if (reuseTokens !== undefined) return { action: 'reuse', cut: from, tokens: reuseTokens };
    if (from === 0) return { action: 'no-cut', tokens: input.requestTokens };
  }

  const chosen = chooseCut(input, from);
  // A cut that would keep only the newest turn keeps the small turn before it too (ADR 0021, amended): then every
  // new cut can be summarised ahead, behind the answer before it (ADR 0009).
  const cut =
    chosen !== undefined && (input.keep.headroomTurns ?? 0) > 0
      ? keepPreviousTurn(input, from, chosen)
      : chosen;
  if (cut !== undefined && cut > from) return { action: 'compact', from, cut };
  // No later cut: the memoized one is still the best start (spill and shedding follow in the rebuild).
  if (reuseTokens !== undefined) return { action: 'reuse', cut: from, tokens: reuseTokens };
  return { action: 'no-cut', tokens: input.requestTokens };
}

/**
 * True when the request's newest turn does not fit the budget beside the fixed part and the block as it stands (the
 * sticky one, or none), and the turns kept before it from `from`, shortened, take at most PREVIOUS_TURN_MAX_TOKENS.
 */
function newestCutAnyway(
  input: PlanInput,
  from: number,
  reuseTokens: number | undefined,
  summaryTokens: number | undefined,
): boolean {
  if (from > 0 && reuseTokens === undefined) return false;
  const allowed = input.allowed ?? allowedCuts(input.messages);
  const newest = newestTurnStart(allowed, input.messages.length);
  if (newest === undefined || newest <= from) return false;
  const block = from > 0 ? (summaryTokens ?? 0) : 0;
  const alone = keptSystemTokens(input) + block + tailTokens(input.messages, newest, input.counter);
  return alone > input.budget.budget && shortenedTokens(input, from, newest) <= PREVIOUS_TURN_MAX_TOKENS;
}

/**
 * The new cut: the keep-recent target snapped to an allowed cut after `from`, then, when that does not fit the budget
 * with a summary block, the first deeper allowed cut that does (or the deepest one there is).
 */
export function chooseCut(input: PlanInput, from: number): number | undefined {
  const preferred = keepRecentCut(input, from);
  if (preferred === undefined || !input.newBlockTokens) return preferred;
  const allowed = input.allowed ?? allowedCuts(input.messages);
  // Tokens of the kept tail for every cut, summed once from the end: a long session has thousands of messages.
  const n = input.messages.length;
  const tail = new Array<number>(n + 1).fill(0);
  for (let i = n - 1; i >= 0; i--) {
    const m = input.messages[i];
    tail[i] = (tail[i + 1] ?? 0) + (m && m.role !== 'system' ? messageTokens(m, input.counter) : 0);
  }
  const fixed = keptSystemTokens(input);
  let deepest = preferred;
  for (let c = preferred; c < n; c++) {
    if (c !== preferred && !allowed[c]) continue;
    deepest = c;
    if (fixed + input.newBlockTokens(c) + (tail[c] ?? 0) <= input.budget.budget) return c;
  }
  return deepest;
}

/** The cut that keeps about `keep.fraction` of (window - reserve), at least MIN_KEPT_MESSAGES, on an allowed cut. */
function keepRecentCut(input: PlanInput, from: number): number | undefined {
  const { messages, counter, budget, keep } = input;
  const allowed = input.allowed ?? allowedCuts(messages);
  const n = messages.length;

  // Walk back from the end to find the target cut.
  let target = n;
  let keptMessages = 0;
  let keptTokens = 0;
  const keepTokens = keep.fraction * (budget.window - budget.reserve);
  const room = keep.messages === undefined ? headroomCap(input, from) : undefined;
  for (let i = n - 1; i > from; i--) {
    const m = messages[i];
    if (!m || m.role === 'system') continue;
    const t = messageTokens(m, counter);
    if (keep.messages !== undefined) {
      if (keptMessages >= keep.messages) break;
    } else if (room !== undefined && i < room.newest && keptTokens + t > room.cap) {
      // Past the newest turn, the minimum gives way to the room the next turns need (ADR 0021).
      break;
    } else if (keptMessages >= MIN_KEPT_MESSAGES && keptTokens + t > keepTokens) {
      break;
    }
    keptMessages += 1;
    keptTokens += t;
    target = i;
  }

  // Prefer the nearest allowed cut at or before the target (keeps a little more), else the nearest after it.
  for (let c = target; c > from; c--) if (allowed[c]) return c;
  for (let c = target + 1; c < n; c++) if (allowed[c]) return c;
  return undefined;
}

/**
 * The most a new cut's kept tail may take so that `keep.headroomTurns` more turns the size of the newest one fit
 * under the budget beside it, the fixed part and the new summary block (ADR 0021), and where the newest turn starts
 * (its last user message: never cut into by this rule). Undefined when the rule is off or there is no user message.
 * Big pastes made the 4-message minimum alone keep two of them, so the next paste crossed the budget again and
 * every compacted turn cost a summariser call (issue 32 item 8).
 */
function headroomCap(input: PlanInput, from: number): { cap: number; newest: number } | undefined {
  const turns = input.keep.headroomTurns ?? 0;
  if (turns <= 0) return undefined;
  const { messages, counter } = input;
  let newest = -1;
  for (let i = messages.length - 1; i > from; i--) {
    if (messages[i]?.role === 'user') {
      newest = i;
      break;
    }
  }
  if (newest === -1) return undefined;
  const growth = tailTokens(messages, newest, counter);
  const block = input.newBlockTokens?.(newest) ?? 0;
  return { cap: input.budget.budget - keptSystemTokens(input) - block - turns * growth, newest };
}
