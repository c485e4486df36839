// The compose stack, the .env.example and the Dockerfile keep the promises docs/deploy.md makes.
// (docker-compose config -q in check-deploy.sh validates the files against the compose schema.)
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from './helm';

const read = (path: string): string => readFileSync(join(REPO_ROOT, path), 'utf8');

/** Every variable of ARCHITECTURE.md#configuration, which .env.example must document. */
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
  'GUARDIAN_COST_PER_1M_OUTPUT_USD',
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

const COMPOSE_FILES = [
  'docker-compose.yml',
  'deploy/compose/gpu.yml',
  'deploy/compose/cpu.yml',
  'deploy/compose/anchor.yml',
  'deploy/compose/litellm-front.yml',
  'deploy/compose/litellm-behind.yml',
  'deploy/compose/team.yml',
];

/** `environment` as a map, whether written as a list (`- KEY=value`, `- KEY`) or a mapping. */
function envMap(environment: unknown): Record<string, string | null> {
  if (Array.isArray(environment)) {
    return Object.fromEntries(
      environment.map((entry: string) => {
        const eq = entry.indexOf('=');
        return eq < 0 ? [entry, null] : [entry.slice(0, eq), entry.slice(eq + 1)];
      }),
    );
  }
  return (environment ?? {}) as Record<string, string | null>;
}

describe('.env.example', () => {
  const text = read('.env.example');
  const documented = new Set([...text.matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]));

  it('documents every variable of ARCHITECTURE.md#configuration', () => {
    expect(CONTRACT_VARIABLES.filter((v) => !documented.has(v))).toEqual([]);
  });

  it('documents every variable the compose files interpolate', () => {
    const used = new Set<string>();
    for (const file of COMPOSE_FILES) {
      for (const m of read(file).matchAll(/\$\{([A-Z][A-Z0-9_]*)/g)) used.add(m[1]!);
    }
    expect([...used].filter((v) => !documented.has(v))).toEqual([]);
  });

  it('leaves every guardian setting commented, so a copied .env keeps the defaults', () => {
    expect(text.match(/^GUARDIAN_/gm)).toBeNull();
  });

  it('chooses vLLM on a GPU by default, and names the GPU-less file beside it', () => {
    expect(text).toMatch(/^COMPOSE_FILE=docker-compose\.yml:deploy\/compose\/gpu\.yml$/m);
    expect(text).toMatch(/^# COMPOSE_FILE=docker-compose\.yml:deploy\/compose\/cpu\.yml$/m);
  });
});

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'));
  const guardian = compose.services.guardian;
  const guardianEnv = envMap(guardian.environment);

  it('runs vllm with the model and window from .env, and asks for no GPU itself (gpu.yml does)', () => {
    const vllm = compose.services.vllm;
    expect(vllm.image).toBe('${VLLM_IMAGE:-vllm/vllm-openai}:${VLLM_TAG:-latest}');
    expect(vllm.command).toEqual(
      expect.arrayContaining(['--model', '${MODEL}', '--max-model-len', '${MAX_MODEL_LEN}']),
    );
    expect(vllm.deploy).toBeUndefined();
  });

  it('wires guardian to vllm and redis, publishes it on loopback only, data on a named volume', () => {
    expect(guardianEnv).toMatchObject({
      GUARDIAN_UPSTREAM_URL: 'http://vllm:8000/v1',
      GUARDIAN_REDIS_URL: 'redis://redis:6379',
      GUARDIAN_HOST: '0.0.0.0',
      GUARDIAN_PORT: '8786',
      GUARDIAN_DATA_DIR: '/data',
    });
    expect(guardian.ports).toEqual(['127.0.0.1:${GUARDIAN_PUBLISH_PORT:-8786}:8786']);
    const [volume, target] = String(guardian.volumes[0]).split(':');
    expect(target).toBe('/data');
    expect(Object.keys(compose.volumes)).toContain(volume);
  });

  // Issue 30 item 1: docker stop's 10 s default killed guardian (exit 137) with a stream still open.
  it("stops guardian with a grace longer than guardian's own, so a stream in flight ends before SIGKILL", () => {
    const seconds = (d: string): number => Number(/^(\d+)s$/.exec(d)?.[1]);
    const grace = Number(guardianEnv.GUARDIAN_SHUTDOWN_GRACE_SECONDS);
    expect(grace).toBeGreaterThan(0);
    expect(seconds(guardian.stop_grace_period)).toBeGreaterThan(grace);
    // A 40 s stream begun as the drain (5 s by default) ends still finishes inside the grace (ADR 0121).
    expect(grace - 5).toBeGreaterThanOrEqual(40 + 10);
  });

  it('hands each service only its own variables from .env, never the whole file (defect 6)', () => {
    for (const file of COMPOSE_FILES) expect(read(file)).not.toMatch(/env_file/);
    // Every guardian setting .env.example documents passes through by name, except the stack's wiring
    // (set above) and the tools' own variables, which the sidecar does not read.
    const notForTheSidecar = ['GUARDIAN_URL', 'GUARDIAN_TOKEN', 'GUARDIAN_TAG', 'GUARDIAN_PUBLISH_PORT'];
    const settings = [...read('.env.example').matchAll(/^# (GUARDIAN_[A-Z0-9_]+|OTEL_[A-Z_]+)=/gm)]
      .map((m) => m[1]!)
      .filter((v) => !notForTheSidecar.includes(v));
    expect(settings.filter((v) => !(v in guardianEnv))).toEqual([]);
    expect(Object.keys(guardianEnv).filter((v) => !/^(GUARDIAN_|OTEL_)/.test(v))).toEqual([]);
    expect(envMap(compose.services.vllm.environment)).toEqual({ HF_TOKEN: null });
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

  it('puts Prometheus in the observability profile, and Grafana with the dashboard in dashboards', () => {
    expect(compose.services.prometheus.profiles).toEqual(['observability', 'dashboards']);
    expect(compose.services.grafana.profiles).toEqual(['dashboards']);
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

describe('deploy/compose overrides', () => {
  it('gpu.yml reserves the NVIDIA GPUs for vllm', () => {
    const gpu = parse(read('deploy/compose/gpu.yml'));
    expect(gpu.services.vllm.deploy.resources.reservations.devices[0]).toMatchObject({
      driver: 'nvidia',
      capabilities: ['gpu'],
    });
  });

  it('cpu.yml moves vllm out of the run and points guardian at a llama.cpp server with HF_TOKEN', () => {
    const cpu = parse(read('deploy/compose/cpu.yml'));
    expect(cpu.services.vllm.profiles).toEqual(['vllm']);
    expect(cpu.services.llamacpp.image).toBe('${LLAMACPP_IMAGE:-ghcr.io/ggml-org/llama.cpp:server}');
    expect(cpu.services.llamacpp.deploy).toBeUndefined();
    expect(envMap(cpu.services.llamacpp.environment)).toEqual({ LLAMA_CACHE: '/models', HF_TOKEN: null });
    expect(envMap(cpu.services.guardian.environment)).toEqual({
      GUARDIAN_UPSTREAM_URL: 'http://llamacpp:8080/v1',
    });
  });

  it('anchor.yml puts the anchors on a second volume at /anchor, a folder the image gives uid 10001', () => {
    const anchor = parse(read('deploy/compose/anchor.yml'));
    expect(envMap(anchor.services.guardian.environment)).toEqual({ GUARDIAN_SEAL_ANCHOR_DIR: '/anchor' });
    expect(anchor.services.guardian.volumes).toEqual(['guardian-anchor:/anchor']);
    expect(read('Dockerfile')).toMatch(
      /mkdir -p \/data \/anchor \\\n\s+&& chown 10001:10001 \/data \/anchor/,
    );
  });
});

describe('deploy/compose/team.yml (docs/team.md)', () => {
  const team = parse(read('deploy/compose/team.yml'));

  it('mounts the tokens folder read-only and points GUARDIAN_TOKENS_FILE into it, so a rotation reaches guardian', () => {
    const env = envMap(team.services.guardian.environment);
    expect(env).toEqual({
      GUARDIAN_TOKENS_FILE: '/run/guardian-tokens/tokens',
      GUARDIAN_TOKEN_REQUIRED: '1',
    });
    // A folder, not the file: a file bind mount keeps the old inode when the file is replaced.
    expect(team.services.guardian.volumes).toEqual([
      '${TEAM_TOKENS_DIR:-./team-tokens}:/run/guardian-tokens:ro',
    ]);
  });
});

describe('deploy/compose LiteLLM overrides (docs/deploy.md, "Beside LiteLLM")', () => {
  const front = parse(read('deploy/compose/litellm-front.yml'));
  const behind = parse(read('deploy/compose/litellm-behind.yml'));

  it('litellm-front.yml puts LiteLLM between guardian and vLLM, unpublished', () => {
    expect(envMap(front.services.guardian.environment)).toEqual({
      GUARDIAN_UPSTREAM_URL: 'http://litellm:4000/v1',
    });
    expect(envMap(front.services.litellm.environment)).toMatchObject({
      LITELLM_BACKEND_URL: '${LITELLM_BACKEND_URL:-http://vllm:8000/v1}',
      LITELLM_BACKEND_MODEL: 'hosted_vllm/${MODEL}',
    });
    expect(front.services.litellm.ports).toBeUndefined();
    expect(front.services.litellm.volumes).toEqual([
      './deploy/litellm/front.yaml:/etc/litellm/config.yaml:ro',
    ]);
  });

  it('litellm-behind.yml points LiteLLM at guardian, on 127.0.0.1 only, forwarding the session header', () => {
    expect(behind.services.guardian).toBeUndefined();
    expect(envMap(behind.services.litellm.environment)).toMatchObject({
      LITELLM_BACKEND_URL: 'http://guardian:8786/v1',
      LITELLM_MASTER_KEY: null,
    });
    expect(behind.services.litellm.ports).toEqual(['127.0.0.1:${LITELLM_PUBLISH_PORT:-4000}:4000']);
    expect(behind.services.litellm.volumes).toEqual([
      './deploy/litellm/behind.yaml:/etc/litellm/config.yaml:ro',
    ]);
    expect(parse(read('deploy/litellm/behind.yaml')).general_settings).toMatchObject({
      forward_client_headers_to_llm_api: true,
    });
  });

  it('starts LiteLLM without an outbound call and with its telemetry vetoed', () => {
    for (const compose of [front, behind]) {
      expect(envMap(compose.services.litellm.environment)).toMatchObject({
        LITELLM_LOCAL_MODEL_COST_MAP: 'True',
        LITELLM_TELEMETRY_DISABLED: 'true',
      });
    }
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const build = dockerfile.slice(dockerfile.indexOf(' AS build'), dockerfile.indexOf(' AS runtime'));
  const runtime = dockerfile.slice(dockerfile.indexOf(' AS runtime'));

  it('builds in one stage and ships production dependencies, dist and bin in a slim runtime', () => {
    expect(dockerfile).toMatch(/^FROM \$\{NODE_IMAGE\} AS build$/m);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:20-bookworm-slim$/m);
    expect(dockerfile).toContain('npm prune --omit=dev');
    const copied = [...runtime.matchAll(/^COPY --from=build \S+ (\S+) /gm)].map((m) => m[1]);
    expect(copied).toEqual(['/app/package.json', '/app/node_modules', '/app/dist', '/app/bin']);
  });

  it('names no BuildKit frontend, which would be fetched from Docker Hub (defect 1)', () => {
    expect(dockerfile).not.toMatch(/^#\s*syntax=/im);
  });

  it('makes the dependency install prove itself before compiling (defect 2)', () => {
    expect(build).toMatch(/RUN npm ci [^\n]*\\\n\s+&& npm ls --depth=0/);
  });

  it('leaves the benchmarks, the demo and the stub out of the runtime (defect 5)', () => {
    expect(build).toContain('rm -rf dist/bench dist/apps/demo dist/libs/stub-backend');
  });

  it('runs as uid 10001 with /data as the volume and binds 0.0.0.0', () => {
    expect(runtime).toMatch(/^USER 10001:10001$/m);
    expect(runtime).toMatch(/^VOLUME \["\/data"\]$/m);
    expect(runtime).toContain('GUARDIAN_HOST=0.0.0.0');
    expect(runtime).toContain('GUARDIAN_DATA_DIR=/data');
  });

  it('checks /healthz with node every few seconds, without --start-interval (Engine < 25 refuses it)', () => {
    const healthcheck = runtime.match(/^HEALTHCHECK (.*)$/m)![1]!;
    expect(Number(healthcheck.match(/--interval=(\d+)s/)![1])).toBeLessThanOrEqual(10);
    expect(healthcheck).not.toContain('--start-interval');
    expect(runtime).toMatch(/^HEALTHCHECK .*\n\s+CMD \["node", "-e", ".*\/healthz/m);
    expect(runtime).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m);
    expect(runtime).toContain('ln -s "$f" "/usr/local/bin/$(basename "$f" .js)"');
  });
});
