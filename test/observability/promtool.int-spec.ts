import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GuardianMetrics } from '@guardian/telemetry';
import { stringify } from 'yaml';
import { findTool, howToObtain } from '../support/tools';

// promtool from PATH (Debian's `prometheus` package), or the one `npm test` builds once from the Go module proxy
// (test/support/obtain-tools.sh). These tests run the real Prometheus parser and linter over what we ship and what
// /metrics serves.

const ROOT = join(__dirname, '..', '..');
const PROM_DIR = join(ROOT, 'deploy/prometheus');

function promtool(
  args: string[],
  opts: { cwd?: string; stdin?: string } = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(findTool('promtool') ?? 'promtool', args, { cwd: opts.cwd ?? PROM_DIR });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.on('error', (err) => reject(new Error(howToObtain('promtool'), { cause: err })));
    child.on('close', (code) => resolve({ code, output }));
    // A command that takes its input as arguments may exit before reading stdin: closing it then fails with
    // EPIPE, which says nothing about the check (seen under load in the long tier). Anything else is a failure.
    child.stdin.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') reject(err);
    });
    child.stdin.end(opts.stdin ?? '');
  });
}

describe('promtool over deploy/prometheus and /metrics', () => {
  it('accepts prometheus.yml and the alert rules it loads', async () => {
    const config = await promtool(['check', 'config', 'prometheus.yml']);
    expect(config).toMatchObject({ code: 0 });
    expect(config.output).toContain('1 rule files found');
    expect(await promtool(['check', 'rules', 'alerts.yml'])).toMatchObject({ code: 0 });
  });

  it('passes the alert unit tests in alerts.test.yml', async () => {
    const result = await promtool(['test', 'rules', 'alerts.test.yml']);
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
  });

  it('parses every dashboard query with the real PromQL parser', async () => {
    const dashboard = JSON.parse(
      await readFile(join(ROOT, 'deploy/grafana/context-guardian.json'), 'utf8'),
    ) as {
      panels: { targets?: { expr: string }[]; panels?: unknown[] }[];
    };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    // Grafana fills its interval macros in before Prometheus sees a query; stand-ins do the same here.
    const rules = exprs.map((expr, i) => ({
      record: `dashboard:query_${i}`,
      expr: expr.replace(/\$__rate_interval|\$__interval/g, '1m').replace(/\$__range/g, '6h'),
    }));
    const dir = await mkdtemp(join(tmpdir(), 'cg-promql-'));
    try {
      await writeFile(
        join(dir, 'dashboard-rules.yml'),
        stringify({ groups: [{ name: 'dashboard', rules }] }),
      );
      const result = await promtool(['check', 'rules', 'dashboard-rules.yml'], { cwd: dir });
      expect(result.output).toContain(`SUCCESS: ${rules.length} rules found`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('finds no lint problems in what /metrics serves after some traffic', async () => {
    const metrics = new GuardianMetrics({ version: '0.1.0', defaultMetrics: true });
    metrics.requests.inc({ route: 'chat', outcome: 'compacted' });
    metrics.compactions.inc({ route: 'chat', reason: 'budget' });
    metrics.tokensBefore.observe({ route: 'chat' }, 30500);
    metrics.tokensAfter.observe({ route: 'chat' }, 9100);
    metrics.summariserDuration.observe({ outcome: 'ok' }, 3.2);
    metrics.overhead.observe({ route: 'chat' }, 0.0007);
    metrics.upstreamDuration.observe({ route: 'chat' }, 1.4);
    metrics.upstreamTtfb.observe({ route: 'chat' }, 0.2);
    metrics.memoLookups.inc({ store: 'memory', result: 'miss' });
    metrics.archiveWriteDuration.observe(0.004);
    metrics.archiveDeferred.inc();
    metrics.pinsCarried.set(2);
    metrics.compactionsWithPins.inc();
    metrics.recallToolCalls.inc({ tool: 'search_archive' });
    const text = await metrics.registry.metrics();
    const result = await promtool(['check', 'metrics'], { stdin: text });
    expect(result).toEqual({ code: 0, output: '' });
  });
});
