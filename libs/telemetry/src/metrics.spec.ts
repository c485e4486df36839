import { register as globalRegistry } from 'prom-client';
import {
  COMPACTION_REASONS,
  FAIL_OPEN_STAGES,
  GUARDIAN_METRIC_NAMES,
  GuardianMetrics,
  MEMO_OPS,
  MEMO_RESULTS,
  MEMO_STORES,
  REQUEST_OUTCOMES,
  ROUTES,
  SUMMARISER_OUTCOMES,
  PRECOMPACT_OUTCOMES,
  RECOVERY_OUTCOMES,
  ARCHIVE_FAILURE_REASONS,
  SESSION_HEADER_IGNORED_REASONS,
  USAGE_SIDE_KINDS,
  TOKEN_RELOAD_OUTCOMES,
  ACCESS_REFUSAL_REASONS,
  COMPACTING_ROUTES,
  PROXIED_ROUTES,
  NATIVE_FAMILIES,
  NATIVE_PROBE_VERDICTS,
  RECALL_TOOL_LABELS,
  MAX_MODEL_LABELS,
  NATIVE_ENTRIES,
  NATIVE_OUTCOMES,
  NATIVE_ROUTES,
  NATIVE_HANDLE_OUTCOMES,
  SUMMARY_REFUSAL_REASONS,
} from './metrics';

// Label names a metric may carry, each with the closed set of values it may take. `version` is bounded by
// the code (the build), not by a list here.
const ALLOWED_LABELS: Record<string, readonly string[] | 'code-bounded'> = {
  route: ROUTES,
  entry: NATIVE_ENTRIES,
  outcome: [
    ...REQUEST_OUTCOMES,
    ...NATIVE_OUTCOMES,
    ...NATIVE_HANDLE_OUTCOMES,
    ...SUMMARISER_OUTCOMES,
    ...RECOVERY_OUTCOMES,
    ...PRECOMPACT_OUTCOMES,
    ...TOKEN_RELOAD_OUTCOMES,
  ],
  reason: [
    ...COMPACTION_REASONS,
    ...ARCHIVE_FAILURE_REASONS,
    ...SESSION_HEADER_IGNORED_REASONS,
    ...ACCESS_REFUSAL_REASONS,
    ...SUMMARY_REFUSAL_REASONS,
  ],
  kind: USAGE_SIDE_KINDS,
  family: NATIVE_FAMILIES,
  verdict: NATIVE_PROBE_VERDICTS,
  stage: FAIL_OPEN_STAGES,
  store: MEMO_STORES,
  result: MEMO_RESULTS,
  op: MEMO_OPS,
  le: 'code-bounded',
  tool: RECALL_TOOL_LABELS,
  version: 'code-bounded',
  // GuardianMetrics.modelLabel: the first MAX_MODEL_LABELS names, then `other` (tested below).
  model: 'code-bounded',
};

// Every labelled metric and the closed set each of its labels takes on a fresh registry: the series a
// dashboard's increase() needs before the first event (issue 30 item 3). Written out here, not read from
// metrics.ts, so that a metric added without its boot-time series fails this test.
const BOOT_SERIES: Record<string, Record<string, readonly string[]>> = {
  guardian_requests_total: { route: ROUTES, outcome: REQUEST_OUTCOMES },
  guardian_compactions_total: { route: COMPACTING_ROUTES, reason: COMPACTION_REASONS },
  guardian_fail_open_total: { stage: FAIL_OPEN_STAGES },
  guardian_compaction_input_tokens_sum: { route: COMPACTING_ROUTES },
  guardian_compaction_output_tokens_sum: { route: COMPACTING_ROUTES },
  guardian_summariser_duration_seconds_count: { outcome: SUMMARISER_OUTCOMES },
  guardian_overhead_duration_seconds_count: { route: COMPACTING_ROUTES },
  guardian_upstream_duration_seconds_count: { route: COMPACTING_ROUTES },
  guardian_upstream_ttfb_seconds_count: { route: COMPACTING_ROUTES },
  guardian_memo_lookups_total: { store: MEMO_STORES, result: MEMO_RESULTS },
  guardian_memo_errors_total: { op: MEMO_OPS },
  guardian_archive_write_failures_total: { reason: ARCHIVE_FAILURE_REASONS },
  guardian_oversized_spills_total: { route: COMPACTING_ROUTES },
  guardian_overflow_recoveries_total: { route: COMPACTING_ROUTES, outcome: RECOVERY_OUTCOMES },
  guardian_session_header_ignored_total: { reason: SESSION_HEADER_IGNORED_REASONS },
  guardian_usage_side_requests_total: { kind: USAGE_SIDE_KINDS },
  guardian_recall_tool_calls_total: { tool: RECALL_TOOL_LABELS },
  guardian_precompact_total: { outcome: PRECOMPACT_OUTCOMES },
  guardian_tokens_reloads_total: { outcome: TOKEN_RELOAD_OUTCOMES },
  guardian_access_refusals_total: { reason: ACCESS_REFUSAL_REASONS },
  guardian_websocket_upgrades_refused_total: { route: PROXIED_ROUTES },
  guardian_native_probes_total: { family: NATIVE_FAMILIES, verdict: NATIVE_PROBE_VERDICTS },
  guardian_native_requests_total: { entry: NATIVE_ENTRIES, outcome: NATIVE_OUTCOMES },
  guardian_native_handles_total: { route: NATIVE_ROUTES, outcome: NATIVE_HANDLE_OUTCOMES },
  guardian_tool_results_cleared_total: { route: COMPACTING_ROUTES },
  guardian_stale_recalls_total: { route: COMPACTING_ROUTES },
  guardian_stale_recall_excerpts_total: { route: COMPACTING_ROUTES },
  guardian_summaries_refused_total: { reason: SUMMARY_REFUSAL_REASONS },
};

// Labelled metrics with no series at boot, each for a reason: one value set at construction, a label open to the
// clients' names (bounded at run time), gauges set afresh from the logs at each scrape (read as they stand, never
// through increase()).
const NO_BOOT_SERIES = [
  'guardian_build_info',
  'guardian_backend_truncation_total',
  'guardian_usage_tokens',
  'guardian_usage_compactions',
  'guardian_usage_answers',
  'guardian_usage_cost_usd',
];

/** Every combination of the label values, as `a="x",b="y"` in the order given. */
function combinations(labels: Record<string, readonly string[]>): string[] {
  return Object.entries(labels).reduce<string[]>(
    (acc, [name, values]) =>
      acc.flatMap((prefix) => values.map((v) => (prefix ? `${prefix},` : '') + `${name}="${v}"`)),
    [''],
  );
}

/** The label sets of `series` in the exposition text, each sorted into `a="x",b="y"` by label name. */
function seriesIn(text: string, series: string): Set<string> {
  const found = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_:0-9]+)\{([^}]*)\} /.exec(line);
    if (m?.[1] !== series) continue;
    found.add(
      (m[2] ?? '')
        .split(',')
        .filter((pair) => !pair.startsWith('le='))
        .sort()
        .join(','),
    );
  }
  return found;
}

async function json(metrics: GuardianMetrics) {
  return metrics.registry.getMetricsAsJSON();
}

describe('GuardianMetrics', () => {
  it('exports exactly the names in GUARDIAN_METRIC_NAMES, all under the guardian_ prefix', async () => {
    const names = (await json(new GuardianMetrics())).map((m) => m.name).sort();
    expect(names).toEqual([...GUARDIAN_METRIC_NAMES].sort());
    for (const name of names) expect(name).toMatch(/^guardian_[a-z0-9_]+$/);
  });

  it('names counters with _total and histograms with their unit', async () => {
    for (const metric of await json(new GuardianMetrics())) {
      const type = String(metric.type);
      if (type === 'counter') expect(metric.name).toMatch(/_total$/);
      else expect(metric.name).not.toMatch(/_total$/);
      if (type === 'histogram') expect(metric.name).toMatch(/_(seconds|tokens)$/);
    }
  });

  it('carries only bounded label names and values', async () => {
    const metrics = new GuardianMetrics({ version: '1.2.3' });
    metrics.requests.inc({ route: 'chat', outcome: 'compacted' });
    metrics.overhead.observe({ route: 'chat' }, 0.0004);
    for (const metric of await json(metrics)) {
      for (const value of metric.values) {
        for (const [label, labelValue] of Object.entries(value.labels)) {
          const allowed = ALLOWED_LABELS[label];
          expect({ metric: metric.name, label, known: allowed !== undefined }).toEqual({
            metric: metric.name,
            label,
            known: true,
          });
          if (Array.isArray(allowed)) expect(allowed).toContain(String(labelValue));
        }
      }
    }
  });

  it('shows every fail-open stage, request outcome and memo result at 0 before the first event', async () => {
    const text = await new GuardianMetrics().registry.metrics();
    for (const stage of FAIL_OPEN_STAGES)
      expect(text).toContain(`guardian_fail_open_total{stage="${stage}"} 0`);
    expect(text).toContain('guardian_requests_total{route="chat",outcome="fail_open"} 0');
    expect(text).toContain('guardian_memo_lookups_total{store="redis",result="hit"} 0');
    expect(text).toContain('guardian_compactions_total{route="messages",reason="overflow"} 0');
    expect(text).toContain('guardian_summariser_duration_seconds_count{outcome="short"} 0');
  });

  it('shows every bounded label combination of every labelled metric at 0 on a fresh registry, and no other', async () => {
    const text = await new GuardianMetrics().registry.metrics();
    for (const [series, labels] of Object.entries(BOOT_SERIES)) {
      const want = combinations(labels).map((c) => c.split(',').sort().join(','));
      expect({ series, found: [...seriesIn(text, series)].sort() }).toEqual({ series, found: want.sort() });
      for (const c of combinations(labels)) expect(text).toContain(`${series}{${c}} 0\n`);
    }
    // Every metric declared with labels is in the table above or named as an exception: found by its label names, not
    // by its values at boot, so a metric that has none yet (the very fault this guards against) is not missed.
    const labelled = new GuardianMetrics().registry
      .getMetricsAsArray()
      .filter((m) => (m as unknown as { labelNames: readonly string[] }).labelNames.length > 0)
      .map((m) => m.name);
    const covered = Object.keys(BOOT_SERIES).map((s) => s.replace(/_(sum|count)$/, ''));
    expect(labelled.filter((name) => !covered.includes(name)).sort()).toEqual([...NO_BOOT_SERIES].sort());
    expect(seriesIn(text, 'guardian_build_info')).toEqual(new Set(['version="unknown"']));
  });

  it('reports the build version, a sound seal and what was observed', async () => {
    const metrics = new GuardianMetrics({ version: '0.1.0' });
    metrics.compactions.inc({ route: 'chat', reason: 'budget' });
    metrics.tokensBefore.observe({ route: 'chat' }, 30000);
    metrics.tokensAfter.observe({ route: 'chat' }, 9000);
    metrics.activeSessions.set(3);
    const text = await metrics.registry.metrics();
    expect(text).toContain('guardian_build_info{version="0.1.0"} 1');
    expect(text).toContain('guardian_archive_seal_ok 1');
    expect(text).toContain('guardian_compactions_total{route="chat",reason="budget"} 1');
    expect(text).toContain('guardian_compaction_input_tokens_bucket{le="32768",route="chat"} 1');
    expect(text).toContain('guardian_compaction_output_tokens_sum{route="chat"} 9000');
    expect(text).toContain('guardian_active_sessions 3');
  });

  it('bounds the model label: the first MAX_MODEL_LABELS names, then other', async () => {
    const metrics = new GuardianMetrics();
    for (let i = 0; i < MAX_MODEL_LABELS + 10; i++)
      metrics.backendTruncations.inc({ model: metrics.modelLabel(`model-${i}`) });
    metrics.backendTruncations.inc({ model: metrics.modelLabel('model-0') });
    const series = seriesIn(await metrics.registry.metrics(), 'guardian_backend_truncation_total');
    expect(series.size).toBe(MAX_MODEL_LABELS + 1);
    expect(series).toContain('model="other"');
    expect(await metrics.total(metrics.backendTruncations, { model: 'other' })).toBe(10);
    expect(await metrics.total(metrics.backendTruncations, { model: 'model-0' })).toBe(2);
  });

  it('keeps its own registry: two instances coexist and the global registry stays empty', async () => {
    const a = new GuardianMetrics();
    const b = new GuardianMetrics();
    a.requests.inc({ route: 'chat', outcome: 'passthrough' });
    expect(await b.registry.metrics()).toContain(
      'guardian_requests_total{route="chat",outcome="passthrough"} 0',
    );
    expect(globalRegistry.getMetricsAsArray()).toEqual([]);
  });

  it('adds the Node.js process metrics, also prefixed, only when asked', async () => {
    const without = (await json(new GuardianMetrics())).map((m) => m.name);
    const withDefaults = (await json(new GuardianMetrics({ defaultMetrics: true }))).map((m) => m.name);
    expect(without).not.toContain('guardian_process_cpu_seconds_total');
    expect(withDefaults).toContain('guardian_process_cpu_seconds_total');
    for (const name of withDefaults) expect(name).toMatch(/^guardian_/);
  });
});

describe('GuardianMetrics.total', () => {
  it('sums the series that carry the given labels, and counts a histogram by its observations', async () => {
    const metrics = new GuardianMetrics();
    metrics.compactions.inc({ route: 'chat', reason: 'budget' }, 2);
    metrics.compactions.inc({ route: 'messages', reason: 'overflow' });
    metrics.summariserDuration.observe({ outcome: 'ok' }, 1.5);
    metrics.summariserDuration.observe({ outcome: 'error' }, 0.2);
    metrics.pinsCarried.set(3);
    expect(await metrics.total(metrics.compactions)).toBe(3);
    expect(await metrics.total(metrics.compactions, { reason: 'overflow' })).toBe(1);
    expect(await metrics.total(metrics.summariserDuration)).toBe(2);
    expect(await metrics.total(metrics.summariserDuration, { outcome: 'ok' })).toBe(1);
    expect(await metrics.total(metrics.pinsCarried)).toBe(3);
    expect(await metrics.total(metrics.failOpen, { stage: 'memo' })).toBe(0);
  });
});
