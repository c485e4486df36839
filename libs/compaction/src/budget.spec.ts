import { computeBudget } from './budget';

describe('computeBudget', () => {
  // CONTRACTS §3 (the seed's formula): min(floor(window x threshold), window - reserve).
  it.each([
    { window: 32768, threshold: 0.85, reserve: 4096, budget: 27852, applied: 4096, clamped: false },
    { window: 32768, threshold: 0.95, reserve: 4096, budget: 28672, applied: 4096, clamped: false },
    { window: 8192, threshold: 0.5, reserve: 1024, budget: 4096, applied: 1024, clamped: false },
    { window: 1000, threshold: 1, reserve: 0, budget: 1000, applied: 0, clamped: false },
    { window: 1001, threshold: 0.333, reserve: 10, budget: 333, applied: 10, clamped: false },
    { window: 8192, threshold: 0.9, reserve: 8191, budget: 1, applied: 8191, clamped: false },
  ])('window $window x $threshold, reserve $reserve -> $budget', (row) => {
    expect(computeBudget(row.window, row.threshold, row.reserve)).toEqual({
      window: row.window,
      budget: row.budget,
      reserve: row.applied,
      reserveClamped: row.clamped,
    });
  });

  // A reserve at or above the window would leave no room: clamped to half the window and flagged.
  it.each([
    { window: 8192, threshold: 0.9, reserve: 8192, budget: 4096, applied: 4096 },
    { window: 8192, threshold: 0.9, reserve: 50000, budget: 4096, applied: 4096 },
    { window: 8191, threshold: 0.9, reserve: 8191, budget: 4096, applied: 4095 },
    { window: 8192, threshold: 0.3, reserve: 9000, budget: 2457, applied: 4096 },
  ])('reserve $reserve >= window $window is clamped to $applied', (row) => {
    expect(computeBudget(row.window, row.threshold, row.reserve)).toEqual({
      window: row.window,
      budget: row.budget,
      reserve: row.applied,
      reserveClamped: true,
    });
  });
});
