import { allowedCuts } from './cuts';
import { messageTokens, tokensForChars } from './estimate';
import type { BudgetInfo, Counter, KeepRecent, NeutralMessage } from './types';

/** The fewest messages a new cut keeps verbatim (CONTRACTS §3). */
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
}

export type Plan =
  /** Under budget: forward unchanged. */
  | { action: 'fits'; tokens: number }
  /** The memoized cut still fits: forward its summary and the messages after it (no summariser call). */
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
export function keptSystemTokens(input: Pick<PlanInput, 'messages' | 'fixedChars' | 'counter'>): number {
  let t = tokensForChars(input.fixedChars, input.counter);
  for (const m of input.messages) if (m.role === 'system') t += messageTokens(m, input.counter);
  return t;
}

/** Tokens of a request after a cut, with a summary block of `summaryTokens` in front of the kept tail. */
export function tokensAfterCut(input: PlanInput, cut: number, summaryTokens: number): number {
  return keptSystemTokens(input) + summaryTokens + tailTokens(input.messages, cut, input.counter);
}

/**
 * Decides what to do with one request (CONTRACTS §3): forward it as it is while it fits; reuse the memoized
 * (sticky) cut while its summary plus the kept tail fit; otherwise choose a new, later cut that keeps about
 * `keep.fraction` of (window - reserve) verbatim, never fewer than MIN_KEPT_MESSAGES messages
 * (or exactly `keep.messages`), never splitting a tool call from its results.
 */
export function planCompaction(input: PlanInput): Plan {
  const { messages, budget, memo } = input;
  if (input.requestTokens <= budget.budget) return { action: 'fits', tokens: input.requestTokens };

  const from = memo && memo.cut < messages.length ? memo.cut : 0;
  if (memo && from > 0) {
    const tokens = tokensAfterCut(input, from, memo.summaryTokens);
    if (tokens <= budget.budget) return { action: 'reuse', cut: from, tokens };
  }

  const cut = chooseCut(input, from);
  if (cut === undefined) return { action: 'no-cut', tokens: input.requestTokens };
  return { action: 'compact', from, cut };
}

/** The new cut: the target from keep-recent, snapped to an allowed cut after `from`. */
export function chooseCut(input: PlanInput, from: number): number | undefined {
  const { messages, counter, budget, keep } = input;
  const allowed = allowedCuts(messages);
  const n = messages.length;

  // Walk back from the end to find the target cut.
  let target = n;
  let keptMessages = 0;
  let keptTokens = 0;
  const keepTokens = keep.fraction * (budget.window - budget.reserve);
  for (let i = n - 1; i > from; i--) {
    const m = messages[i];
    if (!m || m.role === 'system') continue;
    const t = messageTokens(m, counter);
    if (keep.messages !== undefined) {
      if (keptMessages >= keep.messages) break;
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
