// What an operator relies on in the rendered chart: where guardian runs, what it mounts, what it may
// reach, and that values map 1:1 onto the variables of ARCHITECTURE.md#configuration.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CHART_DIR, find, only, render, renderError, type K8sObject } from './helm';

const podSpec = (objects: K8sObject[]): any => (only(objects, 'Deployment') as any).spec.template.spec;
const container = (objects: K8sObject[], name: string): any => {
  const c = podSpec(objects).containers.find((x: any) => x.name === name);
  if (!c) throw new Error(`no container ${name}`);
  return c;
};
const envOf = (c: any): Record<string, any> =>
  Object.fromEntries(c.env.map((e: any) => [e.name, e.value ?? e.valueFrom]));
const egressPorts = (np: any): number[] =>
  np.spec.egress.flatMap((rule: any) => rule.ports.map((p: any) => p.port));

describe('standalone mode (defaults)', () => {
  const objects = render({ files: ['test/deploy/values/standalone-minimal.yaml'] });
  const guardian = container(objects, 'guardian');

  it('runs guardian alone, bound to all interfaces, forwarding to upstream.url', () => {
    expect(podSpec(objects).containers.map((c: any) => c.name)).toEqual(['guardian']);
    const env = envOf(guardian);
    expect(env.GUARDIAN_HOST).toBe('0.0.0.0');
    expect(env.GUARDIAN_UPSTREAM_URL).toBe('http://vllm:8000/v1');
  });

  it('mounts the shared ReadWriteMany claim at the data dir, so spans land on it', () => {
    const env = envOf(guardian);
    const mount = guardian.volumeMounts.find((m: any) => m.mountPath === env.GUARDIAN_DATA_DIR);
    expect(mount).toBeDefined();
    const volume = podSpec(objects).volumes.find((v: any) => v.name === mount.name);
    const claim = only(objects, 'PersistentVolumeClaim') as any;
    expect(volume.persistentVolumeClaim.claimName).toBe(claim.metadata.name);
    expect(claim.spec.accessModes).toEqual(['ReadWriteMany']);
    expect(claim.metadata.annotations['helm.sh/resource-policy']).toBe('keep');
    // GUARDIAN_SPAN_DIR is left to its default, <data dir>/spans, which is on that claim.
    expect(env.GUARDIAN_SPAN_DIR).toBeUndefined();
  });

  // Issue 12 defect 5: the body limit and the pod's memory must agree (values.yaml, "Sizing rule").
  it('gives Node a heap that fits the memory limit, and a limit that fits the largest body guardian accepts', () => {
    const values = parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as {
      resources: { limits: { memory: string } };
      nodeHeapMiB: number;
    };
    const mib = (q: string): number => Number(q.replace(/Gi$/, '')) * (q.endsWith('Gi') ? 1024 : 1);
    const limit = mib(values.resources.limits.memory);
    const maxBodyMiB = 67108864 / 1024 / 1024; // GUARDIAN_MAX_BODY_BYTES's default (README)
    expect(limit).toBeGreaterThanOrEqual(256 + 8 * maxBodyMiB);
    expect(envOf(guardian).NODE_OPTIONS).toBe(`--max-old-space-size=${values.nodeHeapMiB}`);
    expect(values.nodeHeapMiB).toBeLessThanOrEqual(limit * 0.8);
  });

  it('probes /healthz for liveness and /readyz for readiness', () => {
    expect(guardian.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(guardian.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
  });

  // Issue 30 item 1: the listener closed before the Service dropped the pod, and the 25 s grace was not the pod's.
  it('waits in preStop, then gives guardian the pod grace less the wait and a margin, and stops sooner than SIGKILL', () => {
    expect(guardian.lifecycle.preStop.exec.command).toEqual(['sleep', '5']);
    expect(podSpec(objects).terminationGracePeriodSeconds).toBe(70);
    expect(envOf(guardian).GUARDIAN_SHUTDOWN_GRACE_SECONDS).toBe('60');
    // A 40 s stream begun as guardian's drain (5 s by default) ends finishes inside the grace, with room (ADR 0121).
    expect(Number(envOf(guardian).GUARDIAN_SHUTDOWN_GRACE_SECONDS) - 5).toBeGreaterThanOrEqual(40 + 10);
  });

  it('follows terminationGracePeriodSeconds and the shutdown values into the grace, and refuses a grace of nothing', () => {
    const base = { files: ['test/deploy/values/standalone-minimal.yaml'] };
    const longer = render({
      ...base,
      values: { terminationGracePeriodSeconds: 120, shutdown: { preStopSeconds: 0, marginSeconds: 10 } },
    });
    const c = container(longer, 'guardian');
    expect(c.lifecycle).toBeUndefined();
    expect(envOf(c).GUARDIAN_SHUTDOWN_GRACE_SECONDS).toBe('110');
    expect(
      renderError({
        ...base,
        values: { terminationGracePeriodSeconds: 10, shutdown: { preStopSeconds: 5 } },
      }),
    ).toContain('must exceed shutdown.preStopSeconds + shutdown.marginSeconds (10)');
  });

  it('runs non-root on a read-only root filesystem with every capability dropped', () => {
    const pod = podSpec(objects).securityContext;
    expect(pod).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 10001,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(guardian.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    const tmp = guardian.volumeMounts.find((m: any) => m.mountPath === '/tmp');
    expect(podSpec(objects).volumes.find((v: any) => v.name === tmp.name).emptyDir).toBeDefined();
  });

  it('turns the NetworkPolicy on with DNS and the upstream port only', () => {
    const np = only(objects, 'NetworkPolicy') as any;
    expect(np.spec.policyTypes).toEqual(['Egress']);
    expect(egressPorts(np)).toEqual([53, 53, 8000]);
    expect(np.spec.podSelector.matchLabels).toEqual(
      Object.fromEntries(Object.entries((only(objects, 'Deployment') as any).spec.selector.matchLabels)),
    );
  });

  it('creates no Secret, ServiceMonitor or HPA unless asked', () => {
    expect(find(objects, 'Secret')).toHaveLength(0);
    expect(find(objects, 'ServiceMonitor')).toHaveLength(0);
    expect(find(objects, 'HorizontalPodAutoscaler')).toHaveLength(0);
  });
});

describe('standalone mode with every option', () => {
  const objects = render({ files: ['test/deploy/values/standalone-full.yaml'] });
  const guardian = container(objects, 'guardian');
  const env = envOf(guardian);

  it('reads the Redis URL and the admin token from the Secret, never from plain env', () => {
    const secret = only(objects, 'Secret') as any;
    const decoded = (k: string): string => Buffer.from(secret.data[k], 'base64').toString('utf8');
    expect(decoded('redis-url')).toBe('redis://redis.llm.svc:6380/0');
    expect(decoded('admin-token')).toBe('test-admin-token');
    expect(env.GUARDIAN_REDIS_URL).toEqual({
      secretKeyRef: { name: secret.metadata.name, key: 'redis-url' },
    });
    expect(env.GUARDIAN_ADMIN_TOKEN).toEqual({
      secretKeyRef: { name: secret.metadata.name, key: 'admin-token' },
    });
    const rendered = JSON.stringify(only(objects, 'Deployment'));
    expect(rendered).not.toContain('test-admin-token');
    expect(rendered).not.toContain('redis://');
  });

  it('mounts the tokens file read-only where GUARDIAN_TOKENS_FILE points', () => {
    const mount = guardian.volumeMounts.find((m: any) =>
      env.GUARDIAN_TOKENS_FILE.startsWith(`${m.mountPath}/`),
    );
    expect(mount.readOnly).toBe(true);
    const volume = podSpec(objects).volumes.find((v: any) => v.name === mount.name);
    expect(volume.secret.items).toEqual([{ key: 'tokens', path: 'tokens' }]);
    // No subPath: the kubelet updates a Secret volume in place, and guardian reloads the file (docs/team.md).
    expect(mount.subPath).toBeUndefined();
    const secret = only(objects, 'Secret') as any;
    expect(volume.secret.secretName).toBe(secret.metadata.name);
    expect(Buffer.from(secret.data.tokens, 'base64').toString('utf8')).toBe(
      '{"tok-alice-0123456789abcdef":"alice"}',
    );
  });

  it('puts the anchor dir on a second claim', () => {
    const claims = find(objects, 'PersistentVolumeClaim').map((c) => c.metadata.name);
    expect(claims).toHaveLength(2);
    const mount = guardian.volumeMounts.find((m: any) => m.mountPath === env.GUARDIAN_SEAL_ANCHOR_DIR);
    const volume = podSpec(objects).volumes.find((v: any) => v.name === mount.name);
    expect(claims).toContain(volume.persistentVolumeClaim.claimName);
    expect(volume.persistentVolumeClaim.claimName).not.toBe(
      podSpec(objects).volumes.find((v: any) => v.name === 'data').persistentVolumeClaim.claimName,
    );
  });

  it('opens egress to DNS, the upstream, Redis, the OTLP collector and the extra rule', () => {
    expect(egressPorts(only(objects, 'NetworkPolicy'))).toEqual([53, 53, 4000, 6380, 4318, 9000]);
  });

  it('lets the HPA own the replica count of the Deployment it targets', () => {
    const deployment = only(objects, 'Deployment') as any;
    const hpa = only(objects, 'HorizontalPodAutoscaler') as any;
    expect(deployment.spec.replicas).toBeUndefined();
    expect(hpa.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: deployment.metadata.name,
    });
    expect(deployment.spec.strategy.type).toBe('RollingUpdate');
  });

  it('points the PodDisruptionBudget at the guardian pods', () => {
    const pdb = only(objects, 'PodDisruptionBudget') as any;
    const podLabels = (only(objects, 'Deployment') as any).spec.template.metadata.labels;
    expect(podLabels).toMatchObject(pdb.spec.selector.matchLabels);
  });
});

describe('developer tokens from an existing Secret (docs/team.md)', () => {
  const objects = render({
    files: ['test/deploy/values/standalone-minimal.yaml'],
    values: { auth: { existingSecret: 'team-tokens', tokensFileKey: 'developers', adminTokenKey: 'admin' } },
  });
  const guardian = container(objects, 'guardian');
  const env = envOf(guardian);

  it('mounts that Secret’s key by name, read-only, and makes no Secret of its own', () => {
    expect(find(objects, 'Secret')).toEqual([]);
    const mount = guardian.volumeMounts.find((m: any) =>
      env.GUARDIAN_TOKENS_FILE.startsWith(`${m.mountPath}/`),
    );
    expect([mount.readOnly, mount.subPath]).toEqual([true, undefined]);
    const volume = podSpec(objects).volumes.find((v: any) => v.name === mount.name);
    expect(volume.secret).toMatchObject({
      secretName: 'team-tokens',
      items: [{ key: 'developers', path: 'tokens' }],
    });
    expect(env.GUARDIAN_ADMIN_TOKEN).toEqual({ secretKeyRef: { name: 'team-tokens', key: 'admin' } });
  });
});

describe('sidecar mode', () => {
  const minimal = render({ files: ['test/deploy/values/sidecar-minimal.yaml'] });

  it('puts guardian in the inference pod, forwarding over localhost', () => {
    expect(podSpec(minimal).containers.map((c: any) => c.name)).toEqual(['inference', 'guardian']);
    const inference = container(minimal, 'inference');
    expect(inference.image).toMatch(/^vllm\/vllm-openai:/);
    expect(inference.args).toEqual(expect.arrayContaining(['--model', 'Qwen/Qwen2.5-Coder-7B-Instruct']));
    expect(envOf(container(minimal, 'guardian')).GUARDIAN_UPSTREAM_URL).toBe('http://127.0.0.1:8000/v1');
  });

  it('keeps guardian non-root while the pod leaves the inference image its own user', () => {
    expect(podSpec(minimal).securityContext.runAsNonRoot).toBeUndefined();
    expect(podSpec(minimal).securityContext.fsGroup).toBe(10001);
    expect(container(minimal, 'guardian').securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
  });

  it('exposes only guardian on the Service and adds no NetworkPolicy by default', () => {
    const service = only(minimal, 'Service') as any;
    expect(service.spec.ports.map((p: any) => p.targetPort)).toEqual(['http']);
    expect(find(minimal, 'NetworkPolicy')).toHaveLength(0);
  });

  it('with a NetworkPolicy, opens DNS, Redis and extra rules but no upstream rule (localhost)', () => {
    const full = render({ files: ['test/deploy/values/sidecar-full.yaml'] });
    expect(egressPorts(only(full, 'NetworkPolicy'))).toEqual([53, 53, 6379, 443]);
    expect(envOf(container(full, 'guardian')).GUARDIAN_REDIS_URL).toEqual({
      secretKeyRef: { name: 'shared-redis', key: 'url' },
    });
  });

  it('rolls a ReadWriteOnce single pod with Recreate', () => {
    const example = render({ files: ['deploy/kubernetes/sidecar-values.yaml'] });
    expect((only(example, 'Deployment') as any).spec.strategy.type).toBe('Recreate');
  });
});

describe.each(['test/deploy/values/standalone-full.yaml', 'test/deploy/values/sidecar-full.yaml'])(
  'ServiceMonitor (%s)',
  (file) => {
    it('selects the Service port that serves /metrics from the guardian container', () => {
      const objects = render({ files: [file] });
      const monitor = only(objects, 'ServiceMonitor') as any;
      const service = only(objects, 'Service') as any;
      expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
      expect(monitor.spec.namespaceSelector.matchNames).toEqual(['llm']);
      const [endpoint] = monitor.spec.endpoints;
      expect(endpoint.path).toBe('/metrics');
      const servicePort = service.spec.ports.find((p: any) => p.name === endpoint.port);
      const guardian = container(objects, 'guardian');
      const containerPort = guardian.ports.find((p: any) => p.name === servicePort.targetPort);
      expect(String(containerPort.containerPort)).toBe(envOf(guardian).GUARDIAN_PORT);
    });

    it('is left out where the cluster has no Prometheus Operator CRDs, so the install still succeeds', () => {
      // A ServiceMonitor the API server does not know fails the whole release (issue 13, defect 7).
      const objects = render({ files: [file], apiVersions: [] });
      expect(find(objects, 'ServiceMonitor')).toHaveLength(0);
      expect(find(objects, 'Deployment')).toHaveLength(1);
    });
  },
);

describe('values map 1:1 onto environment variables', () => {
  const valuesConfig = parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')).config as Record<
    string,
    null
  >;
  // camelCase -> SCREAMING_SNAKE, with the four names the rule cannot spell.
  const EXCEPTIONS: Record<string, string> = {
    costPer1mInputUsd: 'GUARDIAN_COST_PER_1M_INPUT_USD',
    costPer1mOutputUsd: 'GUARDIAN_COST_PER_1M_OUTPUT_USD',
    keepAliveMs: 'GUARDIAN_KEEPALIVE_MS',
    otelExporterOtlpEndpoint: 'OTEL_EXPORTER_OTLP_ENDPOINT',
  };
  const expectedName = (key: string): string =>
    EXCEPTIONS[key] ?? `GUARDIAN_${key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()}`;

  it('renders nothing for a key left null, so the application default applies', () => {
    const env = envOf(container(render(), 'guardian'));
    for (const key of Object.keys(valuesConfig)) expect(env[expectedName(key)]).toBeUndefined();
  });

  it('renders each key as its own variable, numbers without exponents and switches as 1/0', () => {
    const set: Record<string, unknown> = {};
    for (const key of Object.keys(valuesConfig)) set[key] = null;
    Object.assign(set, {
      numCtx: 131072,
      maxBodyBytes: 67108864,
      compactThreshold: 0.85,
      dryRun: true,
      summaryMemo: false,
      capture: 'journal',
      otelExporterOtlpEndpoint: 'http://otel:4318',
      costPer1mInputUsd: 0.15,
    });
    const env = envOf(container(render({ values: { config: set } }), 'guardian'));
    expect(env).toMatchObject({
      GUARDIAN_NUM_CTX: '131072',
      GUARDIAN_MAX_BODY_BYTES: '67108864',
      GUARDIAN_COMPACT_THRESHOLD: '0.85',
      GUARDIAN_DRY_RUN: '1',
      GUARDIAN_SUMMARY_MEMO: '0',
      GUARDIAN_CAPTURE: 'journal',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318',
      GUARDIAN_COST_PER_1M_INPUT_USD: '0.15',
    });
  });

  // docs/native-compaction.md, "The key": every replica must seal and open compaction handles with one key.
  it('takes the compaction handle key from a mounted Secret, as the log key', () => {
    const objects = render({
      values: {
        config: { nativeKeyFile: '/etc/guardian-native/key', logKeyFile: '/etc/guardian-log/key' },
        extraVolumes: [{ name: 'native-key', secret: { secretName: 'guardian-native-key' } }],
        extraVolumeMounts: [{ name: 'native-key', mountPath: '/etc/guardian-native', readOnly: true }],
      },
    });
    const guardian = container(objects, 'guardian');
    expect(envOf(guardian)).toMatchObject({
      GUARDIAN_NATIVE_KEY_FILE: '/etc/guardian-native/key',
      GUARDIAN_LOG_KEY_FILE: '/etc/guardian-log/key',
    });
    expect(guardian.volumeMounts).toContainEqual({
      name: 'native-key',
      mountPath: '/etc/guardian-native',
      readOnly: true,
    });
    expect(podSpec(objects).volumes).toContainEqual({
      name: 'native-key',
      secret: { secretName: 'guardian-native-key' },
    });
    // The schema stays strict: an empty path, or a value of another type, is refused before anything renders.
    expect(renderError({ values: { config: { nativeKeyFile: '' } } })).toMatch(/nativeKeyFile/);
    expect(renderError({ values: { config: { nativeKeyFile: 7 } } })).toMatch(/nativeKeyFile/);
  });

  it('maps every config key onto its variable, and the chart README lists each mapping', () => {
    const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8'));
    const props = schema.properties.config.properties as Record<string, any>;
    const sample = (key: string): unknown => {
      const p = props[key];
      if (p.enum) return p.enum.find((v: unknown) => v !== null);
      if (p.pattern) return 'http://collector:4318';
      if (p.type.includes('boolean')) return true;
      if (p.type.includes('integer')) return 7;
      if (p.type.includes('number')) return 0.5;
      return 'x';
    };
    expect(Object.keys(props).sort()).toEqual(Object.keys(valuesConfig).sort());
    const all = Object.fromEntries(Object.keys(valuesConfig).map((k) => [k, sample(k)]));
    const env = envOf(container(render({ values: { config: all } }), 'guardian'));
    const readme = readFileSync(join(CHART_DIR, 'README.md'), 'utf8');
    for (const key of Object.keys(valuesConfig)) {
      expect([key, env[expectedName(key)]]).toEqual([key, expect.any(String)]);
      expect(readme).toContain(`| \`config.${key}\` | \`${expectedName(key)}\` |`);
    }
  });
});
