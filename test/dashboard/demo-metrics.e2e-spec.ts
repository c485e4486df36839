import { spawn } from 'node:child_process';

import { runDemo } from '../../apps/demo/src/demo';
import { samples, sumOf, type Sample } from '../support/prom-text';
import { findTool, howToObtain } from '../support/tools';

// issue 6 item 3: after the demo session every metric it names is present, the compactions counter equals the
// demo's count, and `promtool check metrics` (Debian's prometheus package) has nothing to say about the text.
const NAMED_IN_ISSUE_6 = [
  'guardian_requests_total', // requests by route and outcome
  'guardian_compactions_total', // compactions by route and reason
  'guardian_fail_open_total', // fail-opens by stage
  'guardian_compaction_input_tokens', // tokens before (histogram)
  'guardian_compaction_output_tokens', // tokens after (histogram)
  'guardian_summariser_duration_seconds',
  'guardian_overhead_duration_seconds',
  'guardian_upstream_duration_seconds',
  'guardian_upstream_ttfb_seconds',
  'guardian_memo_lookups_total', // memo hits/misses by store
  'guardian_archive_write_duration_seconds',
  'guardian_archive_write_failures_total',
  'guardian_archive_seal_ok',
  'guardian_active_sessions',
  'guardian_pins_carried',
  'guardian_oversized_spills_total',
];

function promtool(stdin: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(findTool('promtool') ?? 'promtool', ['check', 'metrics']);
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.on('error', (err) => reject(new Error(howToObtain('promtool'), { cause: err })));
    child.on('close', (code) => resolve({ code, output }));
    child.stdin.end(stdin);
  });
}

describe('/metrics after the demo session', () => {
  let report: Awaited<ReturnType<typeof runDemo>>;
  let all: Sample[];
  beforeAll(async () => {
    report = await runDemo({ withMetrics: true });
    all = samples(report.metricsText ?? '');
  });

  it('has every metric issue 6 names, with samples', () => {
    const missing = NAMED_IN_ISSUE_6.filter(
      (name) =>
        !report.metricsText?.includes(`# TYPE ${name} `) ||
        !all.some((s) => s.name === name || s.name === `${name}_count`),
    );
    expect(missing).toEqual([]);
  });

  it('counts exactly the demo compactions, and what the demo did', () => {
    const compactions = all.filter((s) => s.name === 'guardian_compactions_total');
    expect(compactions.reduce((n, s) => n + s.value, 0)).toBe(report.compactions);
    expect(report.compactions).toBeGreaterThan(0);
    const byName = (name: string, labels: Record<string, string> = {}) => sumOf(all, name, labels);
    expect(byName('guardian_compaction_input_tokens_count')).toBe(report.compactions);
    expect(byName('guardian_summariser_duration_seconds_count', { outcome: 'ok' })).toBe(
      report.summariserCalls,
    );
    expect(byName('guardian_memo_lookups_total', { store: 'memory', result: 'hit' })).toBeGreaterThan(0);
    expect(byName('guardian_memo_lookups_total', { store: 'memory', result: 'miss' })).toBeGreaterThan(0);
    expect(byName('guardian_requests_total', { route: 'chat' })).toBe(12);
    expect(byName('guardian_fail_open_total')).toBe(0);
    expect(byName('guardian_archive_seal_ok')).toBe(1);
    expect(byName('guardian_active_sessions')).toBe(1);
  });

  it('passes promtool check metrics with no complaint', async () => {
    expect(await promtool(report.metricsText ?? '')).toEqual({ code: 0, output: '' });
  });
});
