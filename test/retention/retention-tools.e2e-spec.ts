import { driftProbe, DRIFT_TURNS } from '../../bench/retention/drift-probe';
import { openUpstream } from '../../bench/retention/harness';
import { keepFacts, type FactResult, type WindowResult } from '../../bench/retention/keep-facts';

/**
 * Issue 17 §4: the retention tools, run in CI against the project's stub, deterministic. One seed per window here;
 * `npm run bench -- keep-facts` runs three and docs/RETENTION.md records the figures.
 */
const kind = (w: WindowResult, k: FactResult['kind']): FactResult[] => w.facts.filter((f) => f.kind === k);

describe('the keep-facts bench against the stub', () => {
  let windows: WindowResult[] = [];

  beforeAll(async () => {
    windows = (await keepFacts({ model: 'stub-model', seeds: 1, json: false, 'stub-summaries': 'facts' }))
      .windows;
  });

  it('runs at 8,192 and 32,768, answers every request, and compacts at both', () => {
    expect(windows.map((w) => w.window)).toEqual([8192, 32768]);
    for (const w of windows) {
      expect(w.answered).toBe(w.requests);
      expect(w.compactions).toBeGreaterThan(0);
      expect(w.facts).toHaveLength(12);
    }
  });

  it('carries every pinned and every instruction fact verbatim, and the stub can answer each from the request', () => {
    for (const w of windows) {
      for (const f of [...kind(w, 'pinned'), ...kind(w, 'instruction')]) {
        expect({ window: w.window, value: f.value, carried: f.carried, answered: f.answered }).toEqual({
          window: w.window,
          value: f.value,
          carried: true,
          answered: true,
        });
      }
      // Evicted instructions reach the request through the ledger (the stub's summary only lists bare tokens).
      expect(kind(w, 'instruction').some((f) => f.where === 'ledger')).toBe(true);
    }
  });

  it('without the ledger and the stated values, an evicted instruction is carried only as a bare token nobody can answer from', async () => {
    const [off] = (
      await keepFacts({
        model: 'stub-model',
        seeds: 1,
        json: false,
        window: 8192,
        'ledger-max-chars': 0,
        'stated-max-chars': 0,
        'stub-summaries': 'facts',
      })
    ).windows;
    const instructions = kind(off!, 'instruction');
    expect(instructions.filter((f) => f.where === 'ledger' || f.where === 'stated')).toEqual([]);
    expect(instructions.filter((f) => f.answered).length).toBeLessThan(instructions.length);
    // The baseline (nothing compacted) answers them all: the loss is the compaction's, not the reader's.
    expect(instructions.every((f) => f.baseline)).toBe(true);
  });
});

describe('the memo drift probe against the stub', () => {
  it('keeps the five facts either way, with fewer summariser calls and input characters with the memo on', async () => {
    const opts = { model: 'stub-model', window: 8192, json: false };
    const upstream = await openUpstream(opts);
    try {
      const r = await driftProbe(opts, upstream);
      for (const run of [r.on, r.off]) {
        expect(run.answered).toBe(DRIFT_TURNS);
        expect(run.rows.length).toBeGreaterThan(0);
        expect(run.lastSummary).toEqual(r.facts);
        expect(run.leastForwarded).toBe(r.facts.length);
      }
      expect(r.on.summariserCalls).toBeLessThan(r.off.summariserCalls);
      expect(r.on.summariserChars).toBeLessThan(r.off.summariserChars);
    } finally {
      await upstream.close();
    }
  });
});
