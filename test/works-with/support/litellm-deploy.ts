/**
 * The deploy files of both topologies, run in the real LiteLLM from the venv (LiteLLM's image cannot be pulled on
 * this project's machines, docs/deploy.md): the `litellm` service's environment from deploy/compose/litellm-*.yml,
 * with the compose network's names (`vllm:8000`, `guardian:8786`) pointed at loopback, and the config file that
 * service mounts (deploy/litellm/*.yaml) as it is. One request through each proves the wiring a compose user gets.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import OpenAI from 'openai';
import { parse } from 'yaml';

import { startLitellm, type Litellm } from './litellm';
import type { Behind } from './litellm-behind';
import { usageOf, type LitellmRun } from './litellm-checks';
import { REPO_ROOT } from './paths';
import { check, type Row } from './report';
import { startSidecar } from './sidecar';

const LABEL = 'LiteLLM deploy files';
/** The model the stub serves stands in for .env's MODEL. */
const MODEL = 'stub-model';

/** The compose file's `litellm` environment, interpolated as compose would with MODEL set and defaults taken. */
export function composeLitellmEnv(file: string, hosts: Record<string, string>): Record<string, string> {
  const compose = parse(readFileSync(join(REPO_ROOT, file), 'utf8')) as {
    services: { litellm: { environment: string[] } };
  };
  const env: Record<string, string> = {};
  for (const entry of compose.services.litellm.environment) {
    const eq = entry.indexOf('=');
    if (eq < 0) continue; // passed through from .env when set there (the master key is the run's own)
    let value = entry
      .slice(eq + 1)
      .replaceAll('${MODEL}', MODEL)
      .replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');
    for (const [from, to] of Object.entries(hosts)) value = value.replaceAll(from, to);
    env[entry.slice(0, eq)] = value;
  }
  return env;
}

export async function deployRows(run: LitellmRun, b: Behind): Promise<Row[]> {
  const start = (name: 'front' | 'behind', hosts: Record<string, string>): Promise<Litellm> =>
    startLitellm({
      venv: run.venv,
      workDir: join(run.work, `litellm-deploy-${name}`),
      masterKey: run.masterKey,
      models: [],
      configFile: join(REPO_ROOT, 'deploy', 'litellm', `${name}.yaml`),
      env: composeLitellmEnv(`deploy/compose/litellm-${name}.yml`, hosts),
    });
  // Both at once: each takes 15-25 s to import.
  const [front, behind] = await Promise.all([
    start('front', { 'http://vllm:8000': run.stub.url }),
    start('behind', { 'http://guardian:8786': b.tap.url }),
  ]);
  const rows: Row[] = [];
  try {
    const sidecar = await startSidecar({
      upstreamUrl: `${front.url}/v1`,
      dataDir: join(run.work, 'data-deploy-front'),
      logPath: join(run.work, 'sidecar-deploy-front.log'),
    });
    try {
      const failure = await ask(`${sidecar.url}/v1`, run.masterKey, {});
      const w = ((await sidecar.stats()).windows as Record<string, { window: number; source: string }>)[
        MODEL
      ];
      rows.push(
        check(
          `${LABEL}: compose litellm-front.yml + deploy/litellm/front.yaml`,
          front.version,
          !failure && w?.source === 'detected:litellm' && w.window === run.stub.window,
          failure || `window ${JSON.stringify(w)}`,
          `answered through guardian and LiteLLM; window ${String(w?.window)} from ${String(w?.source)}`,
        ),
      );
    } finally {
      await sidecar.stop();
    }
    const seen = b.tap.records.length;
    const failure = await ask(`${behind.url}/v1`, run.masterKey, { 'X-Guardian-Session': 'deploy-check' });
    const arrived = b.tap.records.slice(seen).filter((r) => r.method === 'POST');
    const usage = await usageOf(b.sidecar, 'deploy-check');
    rows.push(
      check(
        `${LABEL}: compose litellm-behind.yml + deploy/litellm/behind.yaml`,
        behind.version,
        !failure &&
          arrived.some((r) => r.headers['x-guardian-session'] === 'deploy-check') &&
          usage !== undefined,
        failure ||
          `guardian saw ${arrived.length} requests, X-Guardian-Session on ${arrived.filter((r) => r.headers['x-guardian-session']).length}`,
        'answered through LiteLLM and guardian; the session header arrived (forward_client_headers_to_llm_api: true) ' +
          `and /guardian/usage?session=deploy-check shows ${String(usage?.used_after_compaction)} tokens`,
      ),
    );
  } finally {
    await front.stop();
    await behind.stop();
  }
  return rows;
}

async function ask(baseURL: string, apiKey: string, headers: Record<string, string>): Promise<string> {
  try {
    await new OpenAI({ baseURL, apiKey, defaultHeaders: headers, maxRetries: 0 }).chat.completions.create({
      model: MODEL,
      max_tokens: 32,
      messages: [{ role: 'user', content: 'One word, please.' }],
    });
    return '';
  } catch (err) {
    return `client got ${err instanceof Error ? err.message.slice(0, 160) : String(err)}`;
  }
}
