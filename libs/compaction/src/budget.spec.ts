import {
  computeBudget,
  marginedBudget,
  overflowRetryBudget,
  sizeProvesFit,
  UNPROVEN_ESTIMATE_MARGIN,
  worstTokensForBytes,
} from './budget';

describe('computeBudget', () => {
  // ARCHITECTURE.md#compaction (the seed's formula): min(floor(window x threshold), window - reserve).
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

describe('marginedBudget', () => {
  const full = computeBudget(32768, 0.85, 8192);

  it('holds back a tenth of the budget while the estimate is unproven, nothing after', () => {
    expect(UNPROVEN_ESTIMATE_MARGIN).toBe(0.1);
    expect(marginedBudget(full, true)).toEqual({ ...full, budget: Math.floor(24576 * 0.9), whole: 24576 });
    expect(marginedBudget(full, false)).toBe(full);
  });
});

describe('overflowRetryBudget (ARCHITECTURE.md#fail-open rule 5: one retry, aimed by what the refusal taught)', () => {
  const base = { window: 8192, threshold: 0.85, reserveOutput: 1024, factor: 1, rawEstimate: 9000 };

  it("believes the upstream's window and its count of what it refused", () => {
    const r = overflowRetryBudget({
      ...base,
      learned: { window: 8192, promptTokens: 9900 },
      sent: { tokens: 9000, raw: 9000 },
    });
    expect(r.budget).toEqual(computeBudget(8192, 0.85, 1024));
    expect(r.factor).toBeCloseTo(1.1);
    expect(r.tokens).toBe(9900);
  });

  it('aims a quarter below what was refused and counts 10% higher when the refusal says nothing', () => {
    const r = overflowRetryBudget({ ...base, learned: {}, sent: { tokens: 6000, raw: 6000 } });
    expect(r.budget.budget).toBe(4500);
    expect(r.factor).toBeCloseTo(1.1);
    expect(r.tokens).toBe(Math.ceil(9000 * 1.1));
  });

  it('never lowers the factor below the one in force', () => {
    const r = overflowRetryBudget({
      ...base,
      factor: 1.2,
      learned: { promptTokens: 5000 },
      sent: { tokens: 6000, raw: 6000 },
    });
    expect(r.factor).toBeCloseTo(1.2);
  });
});

describe('sizeProvesFit', () => {
  const budget = computeBudget(32768, 0.85, 4096);
  const base = { charsPerToken: 3.5, budget, nearBudget: 0.15, precompactThreshold: 0, maxFactor: 1.3 };

  it('holds below the margined budget less the exact-count zone, at the worst factor', () => {
    // 27,852 budget, 25,066 margined, 85% of that: 21,306 tokens, so 57,362 bytes at 3.5 chars and 1.3.
    expect(sizeProvesFit({ ...base, bytes: 57_000 })).toBe(true);
    expect(sizeProvesFit({ ...base, bytes: 57_400 })).toBe(false);
  });

  it('stops where a pre-compaction would start', () => {
    expect(sizeProvesFit({ ...base, bytes: 50_000, precompactThreshold: 0.8 })).toBe(true);
    expect(sizeProvesFit({ ...base, bytes: 55_000, precompactThreshold: 0.8 })).toBe(false);
  });

  it('is the ceiling of bytes / chars per token x the factor', () => {
    expect(worstTokensForBytes(7, 3.5, 1.3)).toBe(3);
    expect(worstTokensForBytes(0, 3.5, 1.3)).toBe(0);
  });
});
