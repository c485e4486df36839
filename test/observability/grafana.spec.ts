import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Dashboard, Panel, RowPanel } from '@grafana/schema';
import { GUARDIAN_METRIC_NAMES, GuardianMetrics } from '@guardian/telemetry';
import { parse as parseYaml } from 'yaml';
import { DashboardError, toDashboard } from './dashboard-check';
import { metricNames, PromqlError } from './promql';

const ROOT = join(__dirname, '..', '..');
const raw: unknown = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/context-guardian.json'), 'utf8'));
const alerts = parseYaml(readFileSync(join(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8')) as {
  groups: { rules: { alert: string; expr: string }[] }[];
};

// Metric type by name, from the app's own registry, so `_bucket` is accepted only on a histogram.
const typeByName = new Map<string, string>();
beforeAll(async () => {
  for (const m of await new GuardianMetrics().registry.getMetricsAsJSON())
    typeByName.set(m.name, String(m.type));
});

/** Names in `names` the app does not export; histogram series may add _bucket, _sum or _count. */
function unknownMetrics(names: string[], extra: readonly string[] = []): string[] {
  return names.filter((name) => {
    if (extra.includes(name) || GUARDIAN_METRIC_NAMES.includes(name)) return false;
    const m = /^(.*)_(bucket|sum|count)$/.exec(name);
    return !(m !== null && typeByName.get(m[1] ?? '') === 'histogram');
  });
}

/** Whether the exposition text has at least one sample of `name`, with or without labels. */
function hasSample(text: string, name: string): boolean {
  return text.split('\n').some((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

function leafPanels(d: Dashboard): Panel[] {
  return (d.panels ?? []).flatMap((p: Panel | RowPanel) =>
    'panels' in p && p.type === 'row' ? p.panels : [p],
  );
}

function exprs(d: Dashboard): string[] {
  return leafPanels(d).flatMap((p) => (p.targets ?? []).map((t) => String(t.expr)));
}

describe('deploy/grafana/context-guardian.json', () => {
  const dashboard = toDashboard(raw);

  it('reads as a @grafana/schema Dashboard at schemaVersion 39 or later', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39);
    expect(dashboard.uid).toBe('context-guardian');
  });

  it('takes its Prometheus from a DS_PROMETHEUS input and variable, used by every panel', () => {
    const inputs = (raw as { __inputs?: { name: string; pluginId: string }[] }).__inputs ?? [];
    expect(inputs).toContainEqual(expect.objectContaining({ name: 'DS_PROMETHEUS', pluginId: 'prometheus' }));
    expect(dashboard.templating?.list).toContainEqual(
      expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource' }),
    );
    for (const panel of leafPanels(dashboard)) expect(panel.datasource?.uid).toBe('${DS_PROMETHEUS}');
  });

  it('has the panels issue 6 asks for', () => {
    const titles = leafPanels(dashboard).map((p) => p.title);
    for (const title of [
      'Request rate',
      'Guardian overhead p50 / p99',
      'Compactions',
      'Tokens kept out',
      'Summariser latency',
      'Fail-opens by stage',
      'Memo hit ratio',
      'Archive health',
    ]) {
      expect(titles).toContain(title);
    }
  });

  it('gives every panel its own id and its own place on the grid', () => {
    const all = dashboard.panels ?? [];
    expect(new Set(all.map((p) => p.id)).size).toBe(all.length);
    const cells = new Set<string>();
    for (const p of all) {
      const g = p.gridPos!;
      for (let x = g.x; x < g.x + g.w; x++) {
        for (let y = g.y; y < g.y + g.h; y++) {
          expect(cells.has(`${x},${y}`) ? `${p.title} overlaps at ${x},${y}` : 'free').toBe('free');
          cells.add(`${x},${y}`);
        }
      }
    }
  });

  it('queries only metrics the app exports, in expressions that parse', () => {
    const all = exprs(dashboard);
    expect(all.length).toBeGreaterThan(10);
    for (const expr of all) {
      const names = metricNames(expr);
      expect(names.length).toBeGreaterThan(0);
      expect({ expr, unknown: unknownMetrics(names) }).toEqual({ expr, unknown: [] });
    }
  });

  // Issue 30 item 3: "Tokens kept out" read 0 on a fresh pod while /metrics showed 132,646. A series born at its
  // first value gives increase() no earlier sample, so each metric a panel reads must be on /metrics at boot.
  it('reads only metrics that a fresh pod already exports, so increase() counts the first event', async () => {
    const text = await new GuardianMetrics().registry.metrics();
    for (const expr of exprs(dashboard)) {
      const missing = metricNames(expr).filter((name) => !hasSample(text, name));
      expect({ expr, missing }).toEqual({ expr, missing: [] });
    }
  });

  it('fills its replica variable from a metric the app exports', () => {
    const variable = dashboard.templating?.list?.find((v) => v.name === 'instance');
    const query = variable?.query as { query: string };
    const m = /^label_values\((\w+),\s*instance\)$/.exec(query.query);
    expect(unknownMetrics([m?.[1] ?? 'missing'])).toEqual([]);
  });
});

describe('deploy/prometheus/alerts.yml', () => {
  it('alerts only on metrics the app exports (and the scrape health `up`)', () => {
    const rules = alerts.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert).sort()).toEqual([
      'GuardianArchiveSealBroken',
      'GuardianArchiveWriteFailures',
      'GuardianDown',
      'GuardianFailOpenRateHigh',
      'GuardianMemoErrors',
      'GuardianTokensFileRefused',
    ]);
    for (const rule of rules) {
      expect({ alert: rule.alert, unknown: unknownMetrics(metricNames(rule.expr), ['up']) }).toEqual({
        alert: rule.alert,
        unknown: [],
      });
    }
  });

  it('alerts only on series a fresh pod already exports (an increase() over a missing series never fires)', async () => {
    const text = await new GuardianMetrics().registry.metrics();
    for (const rule of alerts.groups.flatMap((g) => g.rules)) {
      const missing = metricNames(rule.expr).filter((name) => name !== 'up' && !hasSample(text, name));
      expect({ alert: rule.alert, missing }).toEqual({ alert: rule.alert, missing: [] });
    }
  });
});

describe('the checks themselves', () => {
  it('flag a metric the app does not export, and _bucket on a counter', () => {
    expect(unknownMetrics(metricNames('sum(rate(guardian_nope_total[5m]))'))).toEqual([
      'guardian_nope_total',
    ]);
    expect(unknownMetrics(metricNames('rate(guardian_requests_total_bucket[5m])'))).toEqual([
      'guardian_requests_total_bucket',
    ]);
    expect(unknownMetrics(metricNames('rate(guardian_overhead_duration_seconds_bucket[5m])'))).toEqual([]);
  });

  it('read names through aggregations, label lists, matchers and binary operators', () => {
    expect(
      metricNames(
        'sum by (store) (rate(a_total{x=~"$instance",result="hit"}[$__rate_interval])) / on (store) group_left sum without (le) (b) > bool 0.5',
      ),
    ).toEqual(['a_total', 'b']);
  });

  it.each([
    ['an unclosed call', 'sum(rate(x[5m])'],
    ['a stray bracket', 'x[5m]]'],
    ['an unknown function', 'summ(x)'],
    ['a template variable as a metric', 'rate($metric[5m])'],
    ['nothing', '  '],
  ])('refuse %s', (_label, expr) => {
    expect(() => metricNames(expr)).toThrow(PromqlError);
  });

  it('refuse a dashboard without the fields the schema requires', () => {
    const { schemaVersion: _dropped, ...rest } = raw as Record<string, unknown>;
    expect(() => toDashboard(rest)).toThrow(DashboardError);
    expect(() => toDashboard({ ...(raw as object), panels: [{ type: 'stat', id: 1, title: 't' }] })).toThrow(
      DashboardError,
    );
  });
});
