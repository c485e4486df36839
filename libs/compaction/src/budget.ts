import type { BudgetInfo } from './types';

/**
 * The input budget (CONTRACTS §3, the seed's formula): min(floor(window x threshold), window - reserve).
 * A reserve at or above the window would leave no room at all; it is clamped to half the window and flagged.
 */
export function computeBudget(window: number, threshold: number, reserveOutput: number): BudgetInfo {
  const reserveClamped = reserveOutput >= window;
  const reserve = reserveClamped ? Math.floor(window / 2) : reserveOutput;
  const budget = Math.max(1, Math.min(Math.floor(window * threshold), window - reserve));
  return { window, budget, reserve, reserveClamped };
}
