// LiteLLM as a peer of the overhead benchmark (issue 19): the real proxy, from the venv the works-with runner
// installs (`node -r ./test/support/swc-register.js test/works-with/run-litellm.ts --install`), in front of the same
// stub, with LiteLLM's defaults (one uvicorn worker). Skipped when the venv is absent: the benchmark then has its
// three targets, as before.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

export interface LitellmPeer {
  url: string;
  pid: number | undefined;
  /** LiteLLM refuses a request without its master key: the load generator sends it as a bearer token. */
  headers: Record<string, string>;
  version: string;
  stop(): Promise<void>;
}

/** BENCH_LITELLM_VENV, else where the works-with runner installs it (under the home directory, never the repo). */
export function litellmVenv(): string | undefined {
  const venv =
    process.env.BENCH_LITELLM_VENV ?? join(homedir(), '.cache', 'context-guardian', 'litellm-venv');
  return existsSync(join(venv, 'bin', 'litellm')) ? venv : undefined;
}

export async function startLitellmPeer(venv: string, stubUrl: string, model: string): Promise<LitellmPeer> {
  const dir = mkdtempSync(join(tmpdir(), 'cg-bench-litellm-'));
  const config = join(dir, 'litellm.yaml');
  // JSON is YAML: no YAML writer needed for this one fixed shape.
  writeFileSync(
    config,
    JSON.stringify({
      model_list: [
        {
          model_name: model,
          litellm_params: { model: `hosted_vllm/${model}`, api_base: `${stubUrl}/v1`, api_key: 'none' },
        },
      ],
      general_settings: { master_key: 'os.environ/LITELLM_MASTER_KEY' },
    }),
  );
  const port = await freePort();
  const key = `sk-bench-${randomBytes(16).toString('hex')}`;
  const child = spawn(
    join(venv, 'bin', 'litellm'),
    ['--config', config, '--host', '127.0.0.1', '--port', String(port)],
    {
      cwd: dir,
      // No outbound call at start (the packaged cost map), telemetry vetoed, no proxy variables; its per-request
      // access log is LiteLLM's default and part of what it costs, so it stays on, into /dev/null.
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        LITELLM_MASTER_KEY: key,
        LITELLM_LOCAL_MODEL_COST_MAP: 'True',
        LITELLM_TELEMETRY_DISABLED: 'true',
      },
      stdio: 'ignore',
    },
  );
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitReady(`${url}/health/liveliness`, child);
  } catch (err) {
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  // From the package metadata: LiteLLM's own health answers carry no version without a key.
  const meta = spawnSync(
    join(venv, 'bin', 'python3'),
    ['-c', 'import importlib.metadata as m; print(m.version("litellm"))'],
    { encoding: 'utf8' },
  );
  const version = meta.status === 0 ? meta.stdout.trim() : 'unknown';
  return {
    url,
    pid: child.pid,
    headers: { authorization: `Bearer ${key}` },
    version,
    stop: async () => {
      await stop(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitReady(url: string, child: ChildProcess): Promise<void> {
  // Importing LiteLLM's proxy takes 15-25 s on 2 shared cores.
  const until = Date.now() + 120_000;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`litellm exited with ${child.exitCode} before it was ready`);
    const ok = await fetch(url).then(
      (r) => r.ok,
      // Not listening yet: poll again until the deadline.
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`litellm not ready at ${url} after 120 s`);
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => (clearTimeout(timer), resolve()));
    child.kill('SIGTERM');
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}
