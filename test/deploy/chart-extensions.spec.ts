// The values a platform team adds to the pod and beside it (issue 30 item 2): each renders where Kubernetes
// reads it, points at the chart's own Service, and every object passes its schema (chart-render.spec.ts
// renders the option sets; here each key is checked on its own and against its default).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import {
  find,
  HTTP_ROUTE_API,
  only,
  render,
  renderError,
  REPO_ROOT,
  SERVICE_MONITOR_API,
  type K8sObject,
} from './helm';
import { validateObject } from './k8s-schema';

const EXTENSIONS = 'test/deploy/values/standalone-extensions.yaml';
const SIDECAR_EXTENSIONS = 'test/deploy/values/sidecar-extensions.yaml';
const SIDECAR = { mode: 'sidecar', inference: { model: 'Qwen/Qwen2.5-Coder-7B-Instruct' } };

const podSpec = (objects: K8sObject[]): any => (only(objects, 'Deployment') as any).spec.template.spec;
const container = (objects: K8sObject[], name: string): any => {
  const c = podSpec(objects).containers.find((x: any) => x.name === name);
  if (!c) throw new Error(`no container ${name}`);
  return c;
};
const named = (objects: K8sObject[], kind: string, name: string): any => {
  const found = find(objects, kind).find((o) => o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
};
const extensions = parse(readFileSync(join(REPO_ROOT, EXTENSIONS), 'utf8')) as Record<string, any>;

describe('pod extensions (standalone-extensions.yaml)', () => {
  const objects = render({ files: [EXTENSIONS] });
  const guardian = container(objects, 'guardian');
  const defaults = render({ files: ['test/deploy/values/standalone-minimal.yaml'] });
  const plain = container(defaults, 'guardian');

  it('matches the Kubernetes schemas, every object', () => {
    for (const obj of objects) validateObject(obj);
  });

  it('adds envFrom, a startup probe on /healthz and the lifecycle hooks to the guardian container only', () => {
    expect(guardian.envFrom).toEqual(extensions.envFrom);
    expect(guardian.startupProbe).toEqual({
      httpGet: { path: '/healthz', port: 'http' },
      periodSeconds: 2,
      failureThreshold: 30,
    });
    // A lifecycle of one's own replaces the chart's drain pause as a whole (one `lifecycle` key, not two).
    expect(guardian.lifecycle).toEqual(extensions.lifecycle);
    expect(plain.lifecycle).toEqual({ preStop: { exec: { command: ['sleep', '5'] } } });
    for (const key of ['envFrom', 'startupProbe']) expect(plain[key]).toBeUndefined();
    expect(container(objects, 'log-shipper').envFrom).toBeUndefined();
  });

  it('mounts the extra volumes beside the chart own, which stay', () => {
    const volumes = podSpec(objects).volumes.map((v: any) => v.name);
    expect(volumes).toEqual(expect.arrayContaining(['data', 'tmp', 'ca-bundle']));
    expect(guardian.volumeMounts).toContainEqual(extensions.extraVolumeMounts[0]);
    expect(guardian.volumeMounts.map((m: any) => m.name)).toEqual(expect.arrayContaining(['data', 'tmp']));
  });

  it('runs the init containers first and the extra containers beside guardian', () => {
    expect(podSpec(objects).initContainers.map((c: any) => c.name)).toEqual(['wait-for-upstream']);
    expect(podSpec(objects).containers.map((c: any) => c.name)).toEqual(['guardian', 'log-shipper']);
    expect(podSpec(defaults).initContainers).toBeUndefined();
  });

  it('takes the strategy as given, and refuses a RollingUpdate on a ReadWriteOnce claim', () => {
    expect((only(objects, 'Deployment') as any).spec.strategy).toEqual(extensions.strategy);
    const err = renderError({
      values: { strategy: { type: 'RollingUpdate' }, persistence: { accessMode: 'ReadWriteOnce' } },
    });
    expect(err).toContain('strategy.type RollingUpdate needs persistence.accessMode ReadWriteMany');
    const untyped = renderError({
      values: { strategy: { rollingUpdate: { maxSurge: 1 } }, persistence: { accessMode: 'ReadWriteOnce' } },
    });
    expect(untyped).toContain('strategy.type RollingUpdate needs persistence.accessMode ReadWriteMany');
    const recreate = render({ values: { strategy: { type: 'Recreate' } } });
    expect((only(recreate, 'Deployment') as any).spec.strategy).toEqual({ type: 'Recreate' });
  });

  it('sets the RuntimeClass only when asked', () => {
    expect(podSpec(render({ values: { runtimeClassName: 'gvisor' } })).runtimeClassName).toBe('gvisor');
    expect(podSpec(defaults).runtimeClassName).toBeUndefined();
  });

  it('routes the Ingress to the Service http port, with its class, hosts, TLS and annotations', () => {
    const ingress = only(objects, 'Ingress') as any;
    const service = only(objects, 'Service') as any;
    expect(ingress.spec.ingressClassName).toBe('nginx');
    expect(ingress.spec.tls).toEqual(extensions.ingress.tls);
    expect(ingress.metadata.annotations['nginx.ingress.kubernetes.io/proxy-buffering']).toBe('off');
    const [rule] = ingress.spec.rules;
    expect(rule.host).toBe('guardian.example.internal');
    expect(rule.http.paths).toEqual([
      {
        path: '/',
        pathType: 'Prefix',
        backend: { service: { name: service.metadata.name, port: { name: 'http' } } },
      },
    ]);
    expect(service.spec.ports.map((p: any) => p.name)).toContain('http');
    expect(find(defaults, 'Ingress')).toEqual([]);
  });

  it('attaches the HTTPRoute to the named Gateway and sends it to the Service port', () => {
    const route = only(objects, 'HTTPRoute') as any;
    const service = only(objects, 'Service') as any;
    expect(route.spec.parentRefs).toEqual(extensions.httpRoute.parentRefs);
    expect(route.spec.hostnames).toEqual(['guardian.example.internal']);
    expect(route.spec.rules).toEqual([
      {
        backendRefs: [{ name: service.metadata.name, port: service.spec.ports[0].port }],
        matches: [{ path: { type: 'PathPrefix', value: '/' } }],
        timeouts: { request: '600s' },
      },
    ]);
  });

  it('leaves the HTTPRoute out where the Gateway API is not served, and says so', () => {
    const without = render({ files: [EXTENSIONS], apiVersions: [SERVICE_MONITOR_API] });
    expect(find(without, 'HTTPRoute')).toEqual([]);
    expect(find(without, 'PrometheusRule')).toEqual([]);
    expect(find(render({ files: [EXTENSIONS], apiVersions: [HTTP_ROUTE_API] }), 'HTTPRoute')).toHaveLength(1);
  });

  it('refuses an HTTPRoute without a Gateway to attach to', () => {
    expect(renderError({ values: { httpRoute: { enabled: true } } })).toContain('httpRoute.parentRefs');
  });

  it('adds the relabelings to the ServiceMonitor, whose job is the chart name as in compose', () => {
    const monitor = only(objects, 'ServiceMonitor') as any;
    const service = only(objects, 'Service') as any;
    const [endpoint] = monitor.spec.endpoints;
    expect(endpoint.relabelings).toEqual(extensions.serviceMonitor.relabelings);
    expect(endpoint.metricRelabelings).toEqual(extensions.serviceMonitor.metricRelabelings);
    expect(monitor.metadata.annotations).toEqual({ team: 'llm-platform' });
    // deploy/prometheus/prometheus.yml's job_name, which the alert GuardianDown selects on.
    expect(service.metadata.labels[monitor.spec.jobLabel]).toBe('context-guardian');
  });

  it('renders an extra object given as a map and one given as a template string', () => {
    expect(named(objects, 'ConfigMap', 'guardian-extra-env').data.NODE_EXTRA_CA_CERTS).toBe(
      '/etc/ssl/extra/ca.pem',
    );
    expect(named(objects, 'ConfigMap', 'cg-notes').data).toEqual({ upstream: 'http://vllm:8000/v1' });
  });
});

describe('the alert rules as a PrometheusRule', () => {
  const alerts = parse(readFileSync(join(REPO_ROOT, 'deploy/prometheus/alerts.yml'), 'utf8')) as {
    groups: { rules: { alert: string; expr: string }[] }[];
  };
  const objects = render({ files: [EXTENSIONS] });

  it('holds exactly the rules of deploy/prometheus/alerts.yml, with the labels a ruleSelector matches', () => {
    const rule = only(objects, 'PrometheusRule') as any;
    expect(rule.spec.groups).toEqual(alerts.groups);
    expect(rule.metadata.labels.release).toBe('kube-prometheus-stack');
  });

  it('points GuardianDown at the job the ServiceMonitor scrapes under nameOverride too', () => {
    const renamed = render({ files: [EXTENSIONS], values: { nameOverride: 'coder' } });
    const rules = (only(renamed, 'PrometheusRule') as any).spec.groups.flatMap((g: any) => g.rules);
    expect(rules.find((r: any) => r.alert === 'GuardianDown').expr).toBe('up{job="coder"} == 0');
    const monitor = only(renamed, 'ServiceMonitor') as any;
    expect((only(renamed, 'Service') as any).metadata.labels[monitor.spec.jobLabel]).toBe('coder');
  });

  it('is off by default', () => {
    expect(find(render({}), 'PrometheusRule')).toEqual([]);
  });
});

describe('the Grafana dashboard as a ConfigMap', () => {
  const dashboard: unknown = JSON.parse(
    readFileSync(join(REPO_ROOT, 'deploy/grafana/context-guardian.json'), 'utf8'),
  );

  it('carries the sidecar label and the dashboard of deploy/grafana/ unchanged', () => {
    const cm = named(render({ files: [EXTENSIONS] }), 'ConfigMap', 'cg-context-guardian-dashboard');
    expect(cm.metadata.labels.grafana_dashboard).toBe('1');
    expect(cm.metadata.annotations).toEqual({ grafana_folder: 'LLM' });
    expect(cm.metadata.namespace).toBe('llm');
    expect(JSON.parse(cm.data['context-guardian.json'])).toEqual(dashboard);
  });

  it('goes to the namespace Grafana watches when one is named', () => {
    const objects = render({ values: { grafanaDashboard: { enabled: true, namespace: 'monitoring' } } });
    expect(named(objects, 'ConfigMap', 'cg-context-guardian-dashboard').metadata.namespace).toBe(
      'monitoring',
    );
  });
});

describe('sidecar: the model cache and the inference container', () => {
  it('keeps the model on an emptyDir with a size limit by default, and asks for CPU and memory', () => {
    const objects = render({ values: SIDECAR });
    const cache = podSpec(objects).volumes.find((v: any) => v.name === 'model-cache');
    expect(cache).toEqual({ name: 'model-cache', emptyDir: { sizeLimit: '100Gi' } });
    expect(container(objects, 'inference').resources.requests).toEqual({ cpu: '4', memory: '16Gi' });
    expect(find(objects, 'PersistentVolumeClaim').map((c) => c.metadata.name)).toEqual([
      'cg-context-guardian-data',
    ]);
  });

  it('keeps it on a claim when modelCache.enabled, mounted where the inference server caches', () => {
    const objects = render({ files: [SIDECAR_EXTENSIONS] });
    for (const obj of objects) validateObject(obj);
    const claim = named(objects, 'PersistentVolumeClaim', 'cg-context-guardian-model-cache');
    expect(claim.spec.resources.requests.storage).toBe('40Gi');
    expect(claim.metadata.annotations?.['helm.sh/resource-policy']).toBeUndefined();
    const volume = podSpec(objects).volumes.find((v: any) => v.name === 'model-cache');
    expect(volume.persistentVolumeClaim.claimName).toBe(claim.metadata.name);
    const inference = container(objects, 'inference');
    expect(inference.volumeMounts).toContainEqual({
      name: 'model-cache',
      mountPath: '/root/.cache/huggingface',
    });
    expect(inference.volumeMounts).toContainEqual({
      name: 'chat-templates',
      mountPath: '/templates',
      readOnly: true,
    });
    expect(inference.resources.requests).toEqual({ cpu: '6', memory: '24Gi' });
    expect(podSpec(objects).runtimeClassName).toBe('nvidia');
  });

  it('uses an existing claim as it is', () => {
    const objects = render({
      values: {
        ...SIDECAR,
        inference: { ...SIDECAR.inference, modelCache: { enabled: true, existingClaim: 'weights' } },
      },
    });
    expect(find(objects, 'PersistentVolumeClaim').map((c) => c.metadata.name)).toEqual([
      'cg-context-guardian-data',
    ]);
    expect(
      podSpec(objects).volumes.find((v: any) => v.name === 'model-cache').persistentVolumeClaim.claimName,
    ).toBe('weights');
  });

  it('refuses several replicas on a ReadWriteOnce model cache', () => {
    const err = renderError({
      values: {
        ...SIDECAR,
        replicaCount: 2,
        inference: { ...SIDECAR.inference, modelCache: { enabled: true } },
      },
    });
    expect(err).toContain('inference.modelCache.accessMode ReadWriteMany');
  });
});

describe('the strict schema still refuses what maps onto nothing', () => {
  it.each([
    ['a misspelt lifecycle hook', { lifecycle: { preStopp: {} } }, '/lifecycle'],
    ['an unknown strategy type', { strategy: { type: 'BlueGreen' } }, '/strategy/type'],
    [
      'an ingress path without a slash',
      { ingress: { hosts: [{ paths: [{ path: 'v1' }] }] } },
      '/ingress/hosts/0/paths/0/path',
    ],
    ['an unknown httpRoute key', { httpRoute: { gateway: 'x' } }, "'gateway' not allowed"],
    ['an unknown model cache key', { inference: { modelCache: { persist: true } } }, "'persist' not allowed"],
  ])('%s', (_label, values, message) => {
    expect(renderError({ values })).toContain(message);
  });
});
