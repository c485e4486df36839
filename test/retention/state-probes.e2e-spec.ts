import { carriedAsCurrent, stateFigure, stateProbes, type Scores } from '../../bench/retention/state-probes';
import { stateSession } from '../../bench/retention/state-session';

/**
 * The state bench (issue 32 item 6) against the stub, one seed at each window, so the tool cannot rot. The stub's
 * summaries hold nothing of the conversation (`blank`, the bench's default): what the forwarded probes carry, guardian
 * carried by its own rules, and a plain summary carries only what is still in the kept tail.
 */
describe.each([8192, 32768])(
  'npm run bench -- state-probes at %d, a summariser that holds nothing',
  (window) => {
    let scores: Scores;
    const items = stateSession(1).items.length;
    const share = (arm: 'guardian' | 'plain summary', phase: number): number => {
      const [n, m] = stateFigure(scores, arm, phase, 'carried').split('/').map(Number);
      expect(m).toBe(items);
      return n! / m!;
    };

    beforeAll(async () => {
      ({ scores } = await stateProbes({
        window,
        seeds: 1,
        model: 'stub-model',
        json: false,
        'max-turns': 400,
        'stub-summaries': 'blank',
      }));
    });

    it('reaches three chained compactions and carries at least 95% of the probes through guardian', () => {
      for (const phase of [1, 3]) expect(share('guardian', phase)).toBeGreaterThanOrEqual(0.95);
    });

    it('carries less through a plain summary: the figure is guardian’s, not the summariser’s', () => {
      for (const phase of [1, 3]) expect(share('plain summary', phase)).toBeLessThan(0.5);
    });

    it('answers every probe with the full history, the baseline the other figures stand beside', () => {
      for (const phase of [1, 3])
        expect(stateFigure(scores, 'full context', phase, 'answered')).toBe('12/12');
    });
  },
);

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
