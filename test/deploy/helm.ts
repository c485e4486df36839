// Runs the real helm binary (built by check-deploy.sh into the user cache) and parses what it renders.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const REPO_ROOT = resolve(__dirname, '..', '..');
export const CHART_DIR = join(REPO_ROOT, 'helm', 'context-guardian');
export const VALUES_DIR = join(__dirname, 'values');
/** Keep in step with HELM_VERSION in check-deploy.sh. */
export const HELM_VERSION = 'v3.22.0';
/** helm's own default is v1.20 when built without ldflags; the chart asks for 1.25 or later. */
export const KUBE_VERSION = '1.30.0';
export const RELEASE = 'cg';
export const NAMESPACE = 'llm';

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export interface RenderOptions {
  /** Values files, applied in order (paths relative to the repo root or absolute). */
  files?: string[];
  /** Inline values, applied last, written as a values file (so numbers reach helm as a file would). */
  values?: Record<string, unknown>;
  /**
   * API versions the simulated cluster serves beyond the built-in ones (`helm template --api-versions`).
   * Default: OPTIONAL_APIS (the Prometheus Operator's and the Gateway API's), so that the option sets that
   * enable those objects render them.
   */
  apiVersions?: string[];
}

export const SERVICE_MONITOR_API = 'monitoring.coreos.com/v1/ServiceMonitor';
export const PROMETHEUS_RULE_API = 'monitoring.coreos.com/v1/PrometheusRule';
export const HTTP_ROUTE_API = 'gateway.networking.k8s.io/v1/HTTPRoute';
/** The optional APIs the chart looks for, as a cluster with the Prometheus Operator and the Gateway API serves them. */
export const OPTIONAL_APIS = [SERVICE_MONITOR_API, PROMETHEUS_RULE_API, HTTP_ROUTE_API];

export function helmBinary(): string {
  if (process.env.HELM) return process.env.HELM;
  const cache = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  const path = join(cache, 'context-guardian', `helm-${HELM_VERSION}`, 'helm');
  if (!existsSync(path)) {
    throw new Error(
      `helm ${HELM_VERSION} not found at ${path}: run "npm run check:deploy" once, it builds helm there`,
    );
  }
  return path;
}

function run(
  args: string[],
  options: RenderOptions,
): { status: number | null; stdout: string; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cg-helm-'));
  try {
    const fileArgs = (options.files ?? []).flatMap((f) => ['-f', resolve(REPO_ROOT, f)]);
    if (options.values) {
      const inline = join(dir, 'inline.yaml');
      writeFileSync(inline, JSON.stringify(options.values));
      fileArgs.push('-f', inline);
    }
    const result = spawnSync(helmBinary(), [...args, ...fileArgs], { encoding: 'utf8' });
    if (result.error) throw result.error;
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const templateArgs = (options: RenderOptions): string[] => [
  'template',
  RELEASE,
  CHART_DIR,
  '--namespace',
  NAMESPACE,
  '--kube-version',
  KUBE_VERSION,
  ...(options.apiVersions ?? OPTIONAL_APIS).flatMap((v) => ['--api-versions', v]),
];

/** Every object `helm template` renders for these values. */
export function render(options: RenderOptions = {}): K8sObject[] {
  const out = run(templateArgs(options), options);
  if (out.status !== 0) throw new Error(`helm template failed:\n${out.stderr}`);
  return parseAllDocuments(out.stdout)
    .map((doc) => doc.toJS() as K8sObject | null)
    .filter((obj): obj is K8sObject => obj !== null);
}

/** helm's error text for values the chart must refuse; throws when it renders instead. */
export function renderError(options: RenderOptions): string {
  const out = run(templateArgs(options), options);
  if (out.status === 0) throw new Error('helm template rendered values the chart should refuse');
  return out.stderr;
}

/** `helm lint --strict` output; throws unless it passes. */
export function lint(options: RenderOptions = {}): string {
  const out = run(['lint', '--strict', CHART_DIR], options);
  if (out.status !== 0) throw new Error(`helm lint --strict failed:\n${out.stdout}${out.stderr}`);
  return out.stdout;
}

export function find(objects: K8sObject[], kind: string): K8sObject[] {
  return objects.filter((o) => o.kind === kind);
}

export function only(objects: K8sObject[], kind: string): K8sObject {
  const found = find(objects, kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, rendered ${found.length}`);
  return found[0]!;
}
