// The compose stack, the .env.example and the Dockerfile keep the promises docs/deploy.md makes.
// (docker-compose config -q in check-deploy.sh validates the files against the compose schema.)
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from './helm';

const read = (path: string): string => readFileSync(join(REPO_ROOT, path), 'utf8');

/** Every variable of CONTRACTS §7, which .env.example must document. */
const CONTRACT_VARIABLES = [
  'GUARDIAN_UPSTREAM_URL',
  'GUARDIAN_HOST',
  'GUARDIAN_PORT',
  'GUARDIAN_NUM_CTX',
  'GUARDIAN_COMPACT_THRESHOLD',
  'GUARDIAN_RESERVE_OUTPUT',
  'GUARDIAN_KEEP_RECENT_FRACTION',
  'GUARDIAN_KEEP_RECENT_MESSAGES',
  'GUARDIAN_CHARS_PER_TOKEN',
  'GUARDIAN_COUNT_TOOLS',
  'GUARDIAN_CALIBRATE',
  'GUARDIAN_TOKENIZE_TIMEOUT_MS',
  'GUARDIAN_UPSTREAM_TIMEOUT',
  'GUARDIAN_UPSTREAM_CONNECT_TIMEOUT',
  'GUARDIAN_MAX_BODY_BYTES',
  'GUARDIAN_DATA_DIR',
  'GUARDIAN_SPAN_DIR',
  'GUARDIAN_LOG_DIR',
  'GUARDIAN_RECEIPTS',
  'GUARDIAN_KEEP_SPANS',
  'GUARDIAN_RETENTION_DAYS',
  'GUARDIAN_SEAL_ANCHOR_DIR',
  'GUARDIAN_MIN_SUMMARY_CHARS',
  'GUARDIAN_MIN_TRANSCRIPT_CHARS',
  'GUARDIAN_TOOL_ARG_CHARS',
  'GUARDIAN_SUMMARY_REASONING_EFFORT',
  'GUARDIAN_SUMMARY_MEMO',
  'GUARDIAN_PIN_MAX_CHARS',
  'GUARDIAN_LEDGER_MAX_CHARS',
  'GUARDIAN_DRY_RUN',
  'GUARDIAN_CAPTURE',
  'GUARDIAN_COST_PER_1M_INPUT_USD',
  'GUARDIAN_MAX_SESSIONS',
  'GUARDIAN_REDIS_URL',
  'GUARDIAN_REDIS_PREFIX',
  'GUARDIAN_REDIS_TIMEOUT_MS',
  'GUARDIAN_MEMO_TTL',
  'GUARDIAN_MEMO_LOCK_WAIT_MS',
  'GUARDIAN_ADMIN_TOKEN',
  'GUARDIAN_TOKENS_FILE',
  'GUARDIAN_TOKEN_REQUIRED',
  'GUARDIAN_SESSION_HEADER_REQUIRED',
  'GUARDIAN_ALLOWED_HOSTS',
  'GUARDIAN_URL',
  'GUARDIAN_TOKEN',
  'GUARDIAN_LOG_LEVEL',
  'CG_CC_WINDOW',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
];

describe('.env.example', () => {
  const documented = new Set(
    [...read('.env.example').matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]),
  );

  it('documents every variable of CONTRACTS §7', () => {
    expect(CONTRACT_VARIABLES.filter((v) => !documented.has(v))).toEqual([]);
  });

  it('documents every variable the compose files interpolate', () => {
    const used = new Set<string>();
    for (const file of ['docker-compose.yml', 'deploy/compose/cpu.yml']) {
      for (const m of read(file).matchAll(/\$\{([A-Z][A-Z0-9_]*)/g)) used.add(m[1]!);
    }
    expect([...used].filter((v) => !documented.has(v))).toEqual([]);
  });

  it('leaves every guardian setting commented, so a copied .env keeps the defaults', () => {
    expect(read('.env.example').match(/^GUARDIAN_/gm)).toBeNull();
  });
});

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'));
  const guardian = compose.services.guardian;

  it('runs vllm on a GPU with the model and window from .env', () => {
    const vllm = compose.services.vllm;
    expect(vllm.image).toMatch(/^vllm\/vllm-openai:/);
    expect(vllm.command).toEqual(
      expect.arrayContaining(['--model', '${MODEL}', '--max-model-len', '${MAX_MODEL_LEN}']),
    );
    expect(vllm.deploy.resources.reservations.devices[0]).toMatchObject({
      driver: 'nvidia',
      capabilities: ['gpu'],
    });
  });

  it('wires guardian to vllm and redis, publishes it on loopback only, data on a named volume', () => {
    expect(guardian.environment).toMatchObject({
      GUARDIAN_UPSTREAM_URL: 'http://vllm:8000/v1',
      GUARDIAN_REDIS_URL: 'redis://redis:6379',
    });
    expect(guardian.ports).toEqual(['127.0.0.1:8786:8786']);
    const [volume, target] = String(guardian.volumes[0]).split(':');
    expect(target).toBe('/data');
    expect(Object.keys(compose.volumes)).toContain(volume);
  });

  it('runs guardian with a read-only root and a tmpfs /tmp', () => {
    expect(guardian.read_only).toBe(true);
    expect(guardian.tmpfs).toEqual(['/tmp']);
    expect(guardian.cap_drop).toEqual(['ALL']);
  });

  it('publishes every port of the stack on 127.0.0.1 only', () => {
    const ports = Object.values<any>(compose.services).flatMap((s) => s.ports ?? []);
    expect(ports.filter((p: string) => !p.startsWith('127.0.0.1:'))).toEqual([]);
  });

  it('puts Prometheus and Grafana in the observability profile with the dashboard provisioned', () => {
    expect(compose.services.prometheus.profiles).toEqual(['observability']);
    expect(compose.services.grafana.profiles).toEqual(['observability']);
    expect(compose.services.prometheus.volumes).toContain('./deploy/prometheus:/etc/prometheus:ro');
    expect(compose.services.prometheus.command).toContain('--config.file=/etc/prometheus/prometheus.yml');
    const grafanaVolumes: string[] = compose.services.grafana.volumes;
    expect(grafanaVolumes).toContain('./deploy/grafana/provisioning:/etc/grafana/provisioning:ro');
    const dashboard = grafanaVolumes.find((v) => v.startsWith('./deploy/grafana/context-guardian.json:'))!;
    const provider = parse(read('deploy/grafana/provisioning/dashboards/context-guardian.yaml'));
    expect(dashboard.split(':')[1]!.startsWith(`${provider.providers[0].options.path}/`)).toBe(true);
    const datasource = parse(read('deploy/grafana/provisioning/datasources/prometheus.yaml'));
    expect(datasource.datasources[0]).toMatchObject({ uid: 'prometheus', url: 'http://prometheus:9090' });
  });
});

describe('deploy/compose/cpu.yml', () => {
  const cpu = parse(read('deploy/compose/cpu.yml'));

  it('moves vllm out of the default run and points guardian at a llama.cpp server', () => {
    expect(cpu.services.vllm.profiles).toEqual(['gpu']);
    expect(cpu.services.llamacpp.image).toBe('ghcr.io/ggml-org/llama.cpp:server');
    expect(cpu.services.llamacpp.deploy).toBeUndefined();
    expect(cpu.services.guardian.environment.GUARDIAN_UPSTREAM_URL).toBe('http://llamacpp:8080/v1');
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const runtime = dockerfile.slice(dockerfile.indexOf(' AS runtime'));

  it('builds in one stage and ships production dependencies, dist and bin in a slim runtime', () => {
    expect(dockerfile).toMatch(/^FROM \$\{NODE_IMAGE\} AS build$/m);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:20-bookworm-slim$/m);
    expect(dockerfile).toContain('npm prune --omit=dev');
    const copied = [...runtime.matchAll(/^COPY --from=build \S+ (\S+) /gm)].map((m) => m[1]);
    expect(copied).toEqual(['/app/package.json', '/app/node_modules', '/app/dist', '/app/bin']);
  });

  it('runs as uid 10001 with /data as the volume and binds 0.0.0.0', () => {
    expect(runtime).toMatch(/^USER 10001:10001$/m);
    expect(runtime).toMatch(/^VOLUME \["\/data"\]$/m);
    expect(runtime).toContain('GUARDIAN_HOST=0.0.0.0');
    expect(runtime).toContain('GUARDIAN_DATA_DIR=/data');
  });

  it('checks /healthz with node and lets any CLI replace the default command', () => {
    expect(runtime).toMatch(/^HEALTHCHECK .*\n\s+CMD \["node", "-e", ".*\/healthz/m);
    expect(runtime).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m);
    expect(runtime).toContain('ln -s "$f" "/usr/local/bin/$(basename "$f" .js)"');
  });
});
