// Every option set renders with the real helm, passes `helm lint --strict`, and every object it
// renders matches the Kubernetes schema of its kind.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { find, lint, render, renderError, VALUES_DIR } from './helm';
import { validateObject } from './k8s-schema';

const OPTION_SETS = [
  ...readdirSync(VALUES_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join('test/deploy/values', f)),
  'deploy/kubernetes/standalone-values.yaml',
  'deploy/kubernetes/sidecar-values.yaml',
  'deploy/kubernetes/litellm-front-values.yaml',
  'deploy/kubernetes/litellm-behind-values.yaml',
];

describe.each(OPTION_SETS)('option set %s', (file) => {
  it('passes helm lint --strict', () => {
    expect(lint({ files: [file] })).toContain('0 chart(s) failed');
  });

  it('renders only objects that match their Kubernetes schema', () => {
    const objects = render({ files: [file] });
    expect(find(objects, 'Deployment')).toHaveLength(1);
    expect(find(objects, 'Service')).toHaveLength(1);
    for (const obj of objects) validateObject(obj);
  });
});

describe('values the chart refuses', () => {
  it('refuses several replicas on a ReadWriteOnce claim (ARCHITECTURE.md#files)', () => {
    const err = renderError({ values: { replicaCount: 2, persistence: { accessMode: 'ReadWriteOnce' } } });
    expect(err).toContain('ReadWriteMany');
  });

  it('refuses autoscaling over a per-pod volume', () => {
    const err = renderError({ values: { autoscaling: { enabled: true }, persistence: { enabled: false } } });
    expect(err).toContain('ReadWriteMany');
  });

  it('refuses sidecar mode without a model', () => {
    expect(renderError({ values: { mode: 'sidecar' } })).toContain('inference.model is required');
  });

  it('refuses a config key that maps onto no variable (values.schema.json)', () => {
    expect(renderError({ values: { config: { numCtxx: 4096 } } })).toContain("'numCtxx' not allowed");
  });

  it('refuses a value of the wrong type (values.schema.json)', () => {
    expect(renderError({ values: { config: { compactThreshold: 'high' } } })).toContain(
      '/config/compactThreshold',
    );
  });

  it('refuses an unknown mode', () => {
    expect(renderError({ values: { mode: 'daemonset' } })).toContain('/mode');
  });
});
