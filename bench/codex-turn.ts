// `npm run bench -- codex-turn`: one real Codex turn (`codex exec`, its built-in `openai` provider), timed wall to
// wall, direct to the stub and through the built sidecar (and through BENCH_BASELINE's sidecar when given), in
// interleaved rounds (issue 27 item 5). Codex opens its Responses WebSocket first (`GET /v1/responses` with an
// upgrade); the stub answers that 404, which Codex retries before it falls back to HTTPS, and the sidecar answers
// 426, on which it falls back at once. Needs Codex installed outside the repository (test/works-with/run-clients.ts
// --install puts it in the clients cache, or BENCH_CODEX_BIN names one); it runs only when named.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import {
  baselineBuild,
  envNumber,
  jsonUrl,
  machineLine,
  median,
  SIDECAR_MAIN,
  startChild,
  startSidecarChild,
  writeResults,
  type ChildServer,
} from './support';

const CODEX_BIN =
  process.env.BENCH_CODEX_BIN ??
  join(homedir(), '.cache', 'context-guardian', 'clients', '_openai_codex', 'node_modules', '.bin', 'codex');
const PROMPT = 'Reply with one short line; do not run any tool or read any file.';
/** What Codex logs for each WebSocket attempt that did not connect. */
const WS_FAILED = /failed to connect to Responses WebSocket/g;

interface Target {
  name: string;
  base: string;
  home: string;
  ms: number[];
  wsTries: number[];
  failed: number;
}

function codexHome(dir: string, base: string): string {
  const home = join(dir, '.codex');
  mkdirSync(home, { recursive: true });
  writeFileSync(
    join(home, 'config.toml'),
    [
      'model = "stub-model"',
      `openai_base_url = "${base}"`,
      'check_for_update_on_startup = false',
      '[analytics]',
      'enabled = false',
      '[feedback]',
      'enabled = false',
      '',
    ].join('\n'),
  );
  return home;
}

/** One `codex exec` turn: its wall time, the WebSocket attempts it logged, and whether an answer came out. */
function turn(home: string, cwd: string): Promise<{ ms: number; ws: number; ok: boolean }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(CODEX_BIN, ['exec', '--skip-git-repo-check', '--color', 'never', '-'], {
      cwd,
      env: { PATH: process.env.PATH, HOME: join(home, '..'), CODEX_HOME: home, OPENAI_API_KEY: 'dummy-key' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    child.stdin.end(PROMPT);
    child.once('close', (code) =>
      resolve({
        ms: performance.now() - started,
        ws: (stderr.match(WS_FAILED) ?? []).length,
        ok: code === 0 && stdout.trim().length > 0,
      }),
    );
  });
}

export async function run(): Promise<void> {
  if (!existsSync(CODEX_BIN)) {
    process.stdout.write(
      `codex-turn: skipped, no Codex at ${CODEX_BIN} (run-clients.ts --install, or BENCH_CODEX_BIN)\n`,
    );
    return;
  }
  const rounds = envNumber('BENCH_CODEX_ROUNDS', 5);
  const work = mkdtempSync(join(tmpdir(), 'cg-bench-codex-'));
  const servers: ChildServer[] = [];
  try {
    const stub = await startChild({
      script: join(__dirname, 'stub-child.js'),
      args: ['262144'],
      pick: jsonUrl,
    });
    servers.push(stub);
    const sidecar = await startSidecarChild({
      main: SIDECAR_MAIN,
      upstream: `${stub.url}/v1`,
      dataDir: join(work, 'data'),
    });
    servers.push(sidecar);
    const bases: [string, string][] = [
      ['direct to the stub', `${stub.url}/v1`],
      ['through the sidecar (this build)', `${sidecar.url}/v1`],
    ];
    const baseline = baselineBuild();
    if (baseline) {
      const before = await startSidecarChild({
        main: baseline,
        upstream: `${stub.url}/v1`,
        dataDir: join(work, 'data-baseline'),
      });
      servers.push(before);
      bases.push(['through the sidecar (BENCH_BASELINE)', `${before.url}/v1`]);
    }
    const project = join(work, 'project');
    mkdirSync(project);
    const targets: Target[] = bases.map(([name, base], i) => ({
      name,
      base,
      home: codexHome(join(work, `home${i}`), base),
      ms: [],
      wsTries: [],
      failed: 0,
    }));
    // One untimed turn each: Codex's first start in a fresh home creates its state databases.
    for (const t of targets) await turn(t.home, project);
    for (let r = 0; r < rounds; r++) {
      // Rotating order, so the machine's noise falls on every target alike.
      for (let k = 0; k < targets.length; k++) {
        const t = targets[(r + k) % targets.length]!;
        const got = await turn(t.home, project);
        if (!got.ok) t.failed++;
        t.ms.push(got.ms);
        t.wsTries.push(got.ws);
      }
    }
    const lines = [
      machineLine('codex-turn'),
      `codex exec, one turn, ${rounds} interleaved rounds; wall time in seconds (median, min, max); WebSocket attempts per turn`,
      ...targets.map(
        (t) =>
          `${t.name.padEnd(40)} median ${(median(t.ms) / 1000).toFixed(2)} s, min ${(Math.min(...t.ms) / 1000).toFixed(2)}, ` +
          `max ${(Math.max(...t.ms) / 1000).toFixed(2)}; WebSocket attempts ${median(t.wsTries)} per turn` +
          (t.failed > 0 ? `; ${t.failed} turns without an answer` : ''),
      ),
    ];
    for (const l of lines) process.stdout.write(`${l}\n`);
    process.stdout.write(`results: ${writeResults('codex-turn.txt', lines)}\n`);
  } finally {
    for (const s of servers.reverse()) await s.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
