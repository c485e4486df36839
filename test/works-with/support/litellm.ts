import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { parse, stringify } from 'yaml';

import { DOC_MODEL, DOC_ORIGIN, SESSIONS_DOC } from './doc-snippets';
import { CACHE_DIR, REPO_ROOT } from './paths';
import { freePort, startProc, waitForHttp, type Proc } from './proc';

/** The release docs/WORKS_WITH.md rows were taken with; `--install` puts exactly this one in the venv. */
export const LITELLM_VERSION = '1.108.7';
/** A venv of its own under the runners' cache in the home directory, never in the repository. */
export const DEFAULT_LITELLM_VENV = join(CACHE_DIR, 'litellm-venv');
/** The custom-auth hook that stands in for database-backed virtual keys (see its docstring). */
const DEV_KEYS_PY = join(REPO_ROOT, 'test', 'works-with', 'litellm', 'dev_keys.py');

const python = (venv: string): string => join(venv, 'bin', 'python3');

/**
 * What LiteLLM needs to start without reaching out: the packaged model cost map instead of fetching it at import
 * (LITELLM_LOCAL_MODEL_COST_MAP), its telemetry vetoed (LITELLM_TELEMETRY_DISABLED; it is opt-in and off by
 * default in 1.108, the veto makes that independent of any stored setting), and no proxy variables inherited.
 */
export function litellmEnv(venv: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: `${join(venv, 'bin')}:${process.env.PATH ?? ''}`,
    HOME: process.env.HOME,
    LITELLM_LOCAL_MODEL_COST_MAP: 'True',
    LITELLM_TELEMETRY_DISABLED: 'true',
    LITELLM_LOG: 'INFO',
    PYTHONUNBUFFERED: '1',
    ...extra,
  };
}

/** The installed LiteLLM version, read from the package metadata (importing litellm itself takes seconds). */
export function litellmVersion(venv: string): string | undefined {
  if (!existsSync(python(venv))) return undefined;
  const out = spawnSync(python(venv), ['-c', 'import importlib.metadata as m; print(m.version("litellm"))'], {
    encoding: 'utf8',
    env: litellmEnv(venv),
  });
  return out.status === 0 ? out.stdout.trim() : undefined;
}

/** `python3 -m venv` + `pip install 'litellm[proxy]==LITELLM_VERSION'` (docs/WORKS_WITH.md, "How to re-run"). */
export function installLitellm(venv: string): string {
  mkdirSync(CACHE_DIR, { recursive: true });
  if (!existsSync(python(venv))) {
    const made = spawnSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
    if (made.status !== 0) throw new Error(`python3 -m venv ${venv} failed`);
  }
  const pip = spawnSync(
    python(venv),
    ['-m', 'pip', 'install', '--quiet', `litellm[proxy]==${LITELLM_VERSION}`],
    { stdio: 'inherit', env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' } },
  );
  if (pip.status !== 0) throw new Error(`pip install litellm[proxy]==${LITELLM_VERSION} failed`);
  return `litellm ${litellmVersion(venv) ?? '?'} in ${venv}`;
}

/** One `model_list` entry: a model group LiteLLM serves, routed to an OpenAI-compatible `apiBase`. */
export interface LitellmModel {
  name: string;
  /** LiteLLM's provider route, e.g. `hosted_vllm/stub-model` (vLLM) or `openai/stub-model` (any OpenAI-compatible). */
  model: string;
  apiBase: string;
}

export interface LitellmOptions {
  venv: string;
  workDir: string;
  masterKey: string;
  models: LitellmModel[];
  /** Run this config file as it is (a deploy/litellm/ file) instead of writing one from `models`. */
  configFile?: string;
  /** More environment, e.g. what a compose file gives LiteLLM. */
  env?: Record<string, string>;
  /** Model groups whose clients' `x-*` headers LiteLLM forwards (`model_group_settings`, docs/sessions.md). */
  forwardHeadersFor?: string[];
  /** Developer key -> developer, served by the custom-auth hook in place of database-backed virtual keys. */
  developerKeys?: Record<string, string>;
}

/**
 * The `litellm_settings` docs/sessions.md tells a team to write (the block after `<!-- litellm-check: config -->`),
 * for the given model groups. Throws when the page's block has another shape than the one this runner routes
 * through guardian (`hosted_vllm/`, guardian's `/v1`), so that the page and the run cannot drift apart.
 */
export function docForwardSettings(groups: string[], doc = readFileSync(SESSIONS_DOC, 'utf8')): unknown {
  const marker = '<!-- litellm-check: config -->';
  const at = doc.indexOf(marker);
  const m = at === -1 ? null : /^\s*\n```yaml\n([\s\S]*?)\n```/.exec(doc.slice(at + marker.length));
  if (!m?.[1]) throw new Error(`docs/sessions.md: no yaml block after ${marker}`);
  const page = parse(m[1]) as {
    model_list?: { litellm_params?: { model?: string; api_base?: string } }[];
    litellm_settings?: { model_group_settings?: { forward_client_headers_to_llm_api?: unknown } };
  };
  const params = page.model_list?.[0]?.litellm_params;
  const forwarded = page.litellm_settings?.model_group_settings?.forward_client_headers_to_llm_api;
  if (
    params?.model !== `hosted_vllm/${DOC_MODEL}` ||
    params.api_base !== `${DOC_ORIGIN}/v1` ||
    JSON.stringify(forwarded) !== JSON.stringify([DOC_MODEL])
  )
    throw new Error('docs/sessions.md "Behind LiteLLM": the config block is not the one this runner checks');
  return JSON.parse(
    JSON.stringify(page.litellm_settings).replaceAll(
      JSON.stringify(DOC_MODEL),
      JSON.stringify(groups).slice(1, -1),
    ),
  );
}

/** The proxy config a team would write, in LiteLLM's YAML; the master key is read from the environment. */
export function litellmConfig(o: LitellmOptions): Record<string, unknown> {
  const general: Record<string, unknown> = { master_key: 'os.environ/LITELLM_MASTER_KEY' };
  if (o.developerKeys) general.custom_auth = 'dev_keys.user_api_key_auth';
  const settings = o.forwardHeadersFor?.length ? docForwardSettings(o.forwardHeadersFor) : undefined;
  return {
    model_list: o.models.map((m) => ({
      model_name: m.name,
      litellm_params: { model: m.model, api_base: m.apiBase, api_key: 'none' },
    })),
    general_settings: general,
    ...(settings ? { litellm_settings: settings } : {}),
  };
}

export interface Litellm {
  url: string;
  version: string;
  proc: Proc;
  stop(): Promise<void>;
}

/** The real LiteLLM proxy from the venv, on loopback, on a free (or the given) port. */
export async function startLitellm(o: LitellmOptions & { port?: number }): Promise<Litellm> {
  const version = litellmVersion(o.venv);
  if (!version)
    throw new Error(`no LiteLLM in ${o.venv}: run this runner once with --install (docs/WORKS_WITH.md)`);
  mkdirSync(o.workDir, { recursive: true });
  const config = o.configFile ?? join(o.workDir, 'litellm.yaml');
  if (!o.configFile) writeFileSync(config, stringify(litellmConfig(o)));
  if (o.developerKeys) copyFileSync(DEV_KEYS_PY, join(o.workDir, 'dev_keys.py'));
  const port = o.port ?? (await freePort());
  const env = litellmEnv(o.venv, {
    ...o.env,
    LITELLM_MASTER_KEY: o.masterKey,
    CG_LITELLM_KEYS: JSON.stringify(o.developerKeys ?? {}),
  });
  const proc = startProc({
    cmd: join(o.venv, 'bin', 'litellm'),
    args: ['--config', config, '--host', '127.0.0.1', '--port', String(port)],
    env,
    cwd: o.workDir,
    logPath: join(o.workDir, 'litellm.log'),
  });
  const url = `http://127.0.0.1:${port}`;
  await Promise.race([
    // Importing LiteLLM and its proxy takes 15-25 s on 2 shared cores.
    waitForHttp(`${url}/health/liveliness`, 120_000),
    proc.exited.then((code) => {
      throw new Error(`litellm exited (${String(code)}) before it was ready; see ${proc.logPath}`);
    }),
  ]);
  return { url, version, proc, stop: () => proc.stop() };
}
