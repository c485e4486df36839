// The chart can read only files inside itself (`.Files.Get`), so it keeps copies of the alert rules and the
// dashboard under helm/context-guardian/files/. deploy/ stays the one source (compose mounts it, promtool tests
// it); this test holds the copies byte-equal, so the PrometheusRule and the dashboard ConfigMap cannot drift.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

describe.each([
  ['deploy/prometheus/alerts.yml', 'helm/context-guardian/files/alerts.yml'],
  ['deploy/grafana/context-guardian.json', 'helm/context-guardian/files/context-guardian.json'],
])('%s', (source, copy) => {
  it(`is copied unchanged to ${copy} (after editing it: cp ${source} ${copy})`, () => {
    const want = readFileSync(join(ROOT, source), 'utf8');
    expect({ copy, same: readFileSync(join(ROOT, copy), 'utf8') === want }).toEqual({ copy, same: true });
  });
});
