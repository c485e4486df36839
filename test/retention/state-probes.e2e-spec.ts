import { carriedAsCurrent, stateFigure, stateProbes, type Scores } from '../../bench/retention/state-probes';
import { stateSession } from '../../bench/retention/state-session';

/**
 * The state bench (issue 32 item 6) against the stub, one seed at 8,192, so the tool cannot rot: it runs the
 * session through guardian and through a plain-summary guardian, probes after one and three chained compactions,
 * and scores by exact strings.
 */
describe('npm run bench -- state-probes, against the stub', () => {
  let scores: Scores;

  beforeAll(async () => {
    ({ scores } = await stateProbes({
      window: 8192,
      seeds: 1,
      model: 'stub-model',
      json: false,
      'max-turns': 400,
      'stub-summaries': 'blank',
    }));
  });

  it('reaches three chained compactions and carries at least 95% of the probes through guardian', () => {
    for (const phase of [1, 3]) {
      const [n, m] = stateFigure(scores, 'guardian', phase, 'carried').split('/').map(Number);
      expect(m).toBe(stateSession(1).items.length);
      expect(n! / m!).toBeGreaterThanOrEqual(0.95);
    }
  });

  it('answers every probe with the full history, the baseline the other figures stand beside', () => {
    for (const phase of [1, 3]) expect(stateFigure(scores, 'full context', phase, 'answered')).toBe('12/12');
  });
});

describe('carriedAsCurrent', () => {
  const item = { kind: 'corrected' as const, value: 'FACT-NEW-2', stale: 'FACT-OLD-1', question: '?' };

  it('holds a corrected value as current only when its replaced value is absent, marked, or older', () => {
    expect(carriedAsCurrent('the branch is FACT-NEW-2', item)).toBe(true);
    expect(carriedAsCurrent('the branch is FACT-OLD-1.\nUpdate: it is now FACT-NEW-2', item)).toBe(true);
    expect(carriedAsCurrent('- FACT-NEW-2\n- FACT-OLD-1', item)).toBe(false);
    expect(carriedAsCurrent('- FACT-NEW-2\n- FACT-OLD-1 (superseded)', item)).toBe(true);
    expect(carriedAsCurrent('the branch is FACT-OLD-1', item)).toBe(false);
  });
});
