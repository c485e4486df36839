import type { BudgetInfo } from './types';

/**
 * The input budget (ARCHITECTURE.md#compaction, the seed's formula): min(floor(window x threshold), window - reserve).
 * A reserve at or above the window would leave no room at all; it is clamped to half the window and flagged.
 */
export function computeBudget(window: number, threshold: number, reserveOutput: number): BudgetInfo {
  const reserveClamped = reserveOutput >= window;
  const reserve = reserveClamped ? Math.floor(window / 2) : reserveOutput;
  const budget = Math.max(1, Math.min(Math.floor(window * threshold), window - reserve));
  return { window, budget, reserve, reserveClamped };
}

/**
 * The share of the budget held back while the estimate is unproven: calibration on, no usage sample yet for the
 * model, and no exact count for this request. Characters / 3.5 was 9% under a real
 * backend's count for Codex's first compactions (2,300 tokens over a 24,576 budget, eating the output reserve):
 * docs/adr/0003-counting.md, amendment.
 */
export const UNPROVEN_ESTIMATE_MARGIN = 0.1;

/** The budget to compact against: the whole budget once the count is proven, less the margin before. */
export function marginedBudget(budget: BudgetInfo, unproven: boolean): BudgetInfo {
  if (!unproven) return budget;
  return { ...budget, budget: lessMargin(budget.budget), whole: budget.whole ?? budget.budget };
}

/** A budget less the unproven margin. */
function lessMargin(budget: number): number {
  return Math.max(1, Math.floor(budget * (1 - UNPROVEN_ESTIMATE_MARGIN)));
}

/** What the upstream said when it refused a request as too long (either may be missing: Ollama says neither). */
export interface OverflowLearned {
  window?: number;
  promptTokens?: number;
}

/**
 * The budget and the count for the one retry after an overflow (ARCHITECTURE.md#fail-open rule 5). The upstream's own
 * numbers win:
 * its window sets the budget, and its prompt count of what it refused scales guardian's per-message estimate. With
 * no numbers at all, aim a quarter below what was refused and count 10% higher than before.
 */
export function overflowRetryBudget(opts: {
  learned: OverflowLearned;
  /** The window the retry aims at: the learned one, else the one in force. */
  window: number;
  threshold: number;
  reserveOutput: number;
  /** The refused request: guardian's count of it, and its uncalibrated estimate. */
  sent: { tokens: number; raw: number };
  /** The counter factor in force and the uncalibrated estimate of the client's whole request. */
  factor: number;
  rawEstimate: number;
}): { budget: BudgetInfo; factor: number; tokens: number } {
  const { learned, sent } = opts;
  let budget = computeBudget(opts.window, opts.threshold, opts.reserveOutput);
  if (learned.window === undefined && learned.promptTokens === undefined) {
    const aim = Math.max(1, Math.floor(sent.tokens * 0.75));
    if (aim < budget.budget) budget = { ...budget, budget: aim };
  }
  const factor =
    learned.promptTokens && sent.raw > 0
      ? Math.max(opts.factor, learned.promptTokens / sent.raw)
      : opts.factor * 1.1;
  const tokens = Math.max(learned.promptTokens ?? 0, Math.ceil(opts.rawEstimate * factor));
  return { budget, factor, tokens };
}

/** What decides whether a request's size alone proves it fits (ADR 0013). */
export interface SizeProofInput {
  /** The request body's length in bytes. */
  bytes: number;
  charsPerToken: number;
  /** The budget before any margin; the unproven margin is always taken off. */
  budget: BudgetInfo;
  /** Share of the budget within which an estimate asks for an exact count (either side). */
  nearBudget: number;
  /** Share of the budget from which a request starts a pre-compaction; 0 when that is off. */
  precompactThreshold: number;
  /** The highest factor calibration ever applies. */
  maxFactor: number;
}

/**
 * The most tokens guardian's estimate can give a request of `bytes` bytes of JSON that carries no image or document
 * (which the estimate counts at a fixed size; callers look for them first): every character counted is at least one
 * byte of the body (a UTF-16 code unit never takes fewer UTF-8 bytes; escapes only add), a message's fixed overhead
 * is smaller than its own JSON punctuation, and the calibration factor is at most `maxFactor`.
 */
export function worstTokensForBytes(bytes: number, charsPerToken: number, maxFactor: number): number {
  return Math.ceil((bytes / charsPerToken) * maxFactor);
}

/**
 * True when the size alone proves the full path would forward the request unchanged and do nothing else with it:
 * even the worst estimate stays under the margined budget, below where an exact count is asked for and below where
 * a pre-compaction starts. A request for which this is false goes the full path, whatever its real size.
 */
export function sizeProvesFit(input: SizeProofInput): boolean {
  const worst = worstTokensForBytes(input.bytes, input.charsPerToken, input.maxFactor);
  // The margined figure alone: the object marginedBudget spreads cost more than the rest of the proof, twice a request.
  const budget = lessMargin(input.budget.budget);
  const share = Math.min(1 - input.nearBudget, input.precompactThreshold > 0 ? input.precompactThreshold : 1);
  return worst < budget * share;
}

/**
 * The least room an answer keeps when the client's own part leaves none for the configured reserve: a tenth of the
 * window, at least 1,024 tokens. A tenth also covers an estimate as far off as an unproven one
 * (UNPROVEN_ESTIMATE_MARGIN), so a request cut to the ceiling is not refused for its count.
 */
const ANSWER_FLOOR_TOKENS = 1024;

/**
 * The most a rebuilt request may take where the budget cannot be met (RebuildInput.ceiling): the window less the
 * answer floor. Codex's own part is 9,476 tokens, over the 8,192 budget of a 16,384 window with the default 8,192
 * reserve: without a ceiling its newest paste was forwarded whole, over the window (issue 30 item 11).
 */
export function answerCeiling(budget: BudgetInfo): number {
  return budget.window - Math.max(ANSWER_FLOOR_TOKENS, Math.floor(budget.window * 0.1));
}
