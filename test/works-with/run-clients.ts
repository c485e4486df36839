/**
 * Works-with check for real coding CLIs (docs/WORKS_WITH.md). Not part of `npm test`: it needs the CLIs installed
 * from npm into a scratch folder outside the repository and a built sidecar (`npm run build`).
 *
 *   node -r ./test/support/swc-register.js test/works-with/run-clients.ts --install [--only NAME]
 *   node -r ./test/support/swc-register.js test/works-with/run-clients.ts [--only NAME] [--clients-dir DIR] [--keep]
 *
 * Each client runs one scripted, over-budget conversation (a first turn carrying a big pasted log, then a second
 * turn continuing it when the client can) in an isolated home, against the built sidecar in front of the stub
 * backend, inside a loopback-only network namespace. It passes when a request reached the sidecar, a compaction or
 * an oversized spill happened, and the stub's answer reached the client's output. Each client's real request shapes
 * (no text, no key values) are written to test/works-with/recordings/<client>-<version>.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { CLIENTS, COMMON_ENV, type ClientRun, type ClientSpec } from './clients';
import { installClient, installedVersion } from './support/install';
import { reexecInLoopbackNetns } from './support/netns';
import { runProc } from './support/proc';
import { CACHE_DIR, REPO_ROOT } from './support/paths';
import { check, printRows, requestShape, type Row } from './support/report';
import { startSidecar } from './support/sidecar';
import { startTap } from './support/tap';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const CLIENTS_DIR = arg('--clients-dir') ?? process.env.CG_CLIENTS_DIR ?? join(CACHE_DIR, 'clients');
const ONLY = arg('--only');
const KEEP = process.argv.includes('--keep');
const TURN_TIMEOUT_MS = Number(process.env.CG_TURN_TIMEOUT_MS ?? 240000);
/** What the stub answers; a client passes only if this reaches its output. */
const ANSWER = 'CG_OK';
const MODEL = 'stub-model';
/** Guardian's window: small enough that every client's first request (system prompt, tools, paste) is over budget. */
const WINDOW = '8192';
const RECORDINGS = join(REPO_ROOT, 'test', 'works-with', 'recordings');
const GENERATION_ROUTES = ['/v1/chat/completions', '/v1/messages', '/v1/responses'];

/** A deterministic "pasted build log" (~40,000 characters): big enough to be spilled, no real data. */
function firstPrompt(): string {
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < 40000; i++) {
    lines.push(
      `[build ${String(i).padStart(5, '0')}] compiled module m${i % 97} in ${(i * 37) % 1000} ms, ok`,
    );
  }
  return `Reply with one short line; do not run any tool or read any file. Here is a build log for reference:\n${lines.join('\n')}`;
}

/** The last non-empty line of a client's error output, cut short: enough to say why, no prompt echo. */
const lastLine = (text: string): string =>
  (
    text
      .split('\n')
      .filter((l) => l.trim())
      .pop() ?? ''
  )
    .replace(/\s+/g, ' ')
    .slice(0, 160);

async function runClient(spec: ClientSpec, stub: StubBackend, work: string): Promise<Row> {
  const found = installedVersion(CLIENTS_DIR, spec);
  if (!found) return check(spec.name, '-', false, `not installed under ${CLIENTS_DIR} (run with --install)`);
  const dir = join(work, spec.name.replace(/\W+/g, '-').replace(/-+$/, ''));
  const home = join(dir, 'home');
  const project = join(dir, 'project');
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, 'README.md'), '# scratch project for a context-guardian client check\n');
  const sidecar = await startSidecar({
    upstreamUrl: stub.baseUrl,
    dataDir: join(dir, 'data'),
    logPath: join(dir, 'sidecar.log'),
    env: { GUARDIAN_NUM_CTX: WINDOW },
  });
  const tap = await startTap(sidecar.url);
  stub.reset();
  const run: ClientRun = { home, project, origin: tap.url, model: MODEL };
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    ...COMMON_ENV,
    ...spec.setup(run),
  };
  const turns: { code: number | null; stdout: string; stderr: string; timedOut: boolean }[] = [];
  try {
    const prompts = [firstPrompt(), 'Continue: reply with one short line again.'];
    for (const [i, prompt] of prompts.entries()) {
      const how = i === 0 ? spec.first(prompt, run) : spec.next?.(prompt, run);
      if (!how) break;
      const out = await runProc({
        cmd: found.bin,
        args: how.args,
        env,
        cwd: project,
        timeoutMs: TURN_TIMEOUT_MS,
        input: how.stdin ? prompt : undefined,
      });
      writeFileSync(join(dir, `turn${i + 1}.stdout`), out.stdout);
      writeFileSync(join(dir, `turn${i + 1}.stderr`), out.stderr);
      turns.push(out);
      if (!out.stdout.includes(ANSWER)) break;
    }
    const stats = await sidecar.stats();
    return judge(spec, found.version, { tap: tap.records, stats, turns, stub, sidecar: sidecar.logLines() });
  } finally {
    await tap.close();
    await sidecar.stop();
    if (!KEEP) rmSync(dir, { recursive: true, force: true });
  }
}

function judge(
  spec: ClientSpec,
  version: string,
  got: {
    tap: import('./support/tap').TapRecord[];
    stats: Record<string, unknown>;
    turns: { code: number | null; stdout: string; stderr: string; timedOut: boolean }[];
    stub: StubBackend;
    sidecar: Record<string, unknown>[];
  },
): Row {
  const shapes = got.tap.map(requestShape);
  mkdirSync(RECORDINGS, { recursive: true });
  const file = join(RECORDINGS, `${spec.name.replace(/\W+/g, '-').replace(/-+$/, '')}-${version}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ client: spec.name, package: spec.pkg, version, guardian_window: Number(WINDOW), requests: shapes }, null, 2)}\n`,
  );
  const generations = shapes.filter((s) => GENERATION_ROUTES.includes(s.route));
  const compactions = Number(got.stats.compactions_performed ?? 0);
  const spills = Number(got.stats.oversized_spills ?? 0);
  const upstreamAnswers = got.stub.requests.filter((r) => r.route !== 'other' && !r.isSummary).length;
  const summaries = got.stub.requests.filter((r) => r.isSummary).length;
  const answered = got.turns.map((t) => t.stdout.includes(ANSWER));
  const routes = [...new Set(generations.map((g) => `${g.method} ${g.route}`))].join(', ');
  const detail =
    `turns ${got.turns.length} (answered ${answered.filter(Boolean).length}), client requests ${shapes.length} ` +
    `(generation ${generations.length}: ${routes || 'none'}), first body ${generations[0]?.body_bytes ?? 0} bytes / ` +
    `${generations[0]?.tools ?? 0} tools, compactions ${compactions}, spills ${spills}, summariser calls ${summaries}, ` +
    `upstream generation calls ${upstreamAnswers}, fail_open ${JSON.stringify(got.stats.fail_open)}, ` +
    `log lines ${got.sidecar.length}; recording ${file.slice(REPO_ROOT.length + 1)}`;
  const first = got.turns[0];
  if (generations.length === 0) {
    const why = first?.timedOut
      ? 'timed out'
      : `exit ${String(first?.code)}: ${lastLine(first?.stderr ?? '')}`;
    return check(spec.name, version, false, `no generation request reached the sidecar (${why})`, detail);
  }
  if (compactions === 0 && spills === 0)
    return check(
      spec.name,
      version,
      false,
      'reached the sidecar but nothing was compacted or spilled',
      detail,
    );
  if (!answered.every(Boolean) || got.turns.length === 0) {
    const bad = got.turns[answered.indexOf(false)];
    const why = bad?.timedOut ? 'timed out' : `exit ${String(bad?.code)}: ${lastLine(bad?.stderr ?? '')}`;
    return check(spec.name, version, false, `the stub's answer did not reach the output (${why})`, detail);
  }
  return check(spec.name, version, true, '', detail);
}

async function main(): Promise<void> {
  if (process.argv.includes('--install')) {
    // Before the network namespace: npm needs the registry. Installs and stops; run again without --install.
    for (const spec of CLIENTS.filter((c) => !ONLY || c.name === ONLY || c.bin === ONLY))
      process.stdout.write(`${installClient(CLIENTS_DIR, spec)}\n`);
    return;
  }
  const isolation = reexecInLoopbackNetns();
  const stub = await startStub({
    window: 262144,
    flavor: 'vllm',
    model: MODEL,
    reply: () => ({ text: `${ANSWER}: the stub backend answered.` }),
  });
  const work = mkdtempSync(join(tmpdir(), 'cg-works-with-clients-'));
  process.stdout.write(
    `# clients against the built sidecar (GUARDIAN_NUM_CTX=${WINDOW}) and the stub; isolation: ${isolation.why}\n`,
  );
  const rows: Row[] = [];
  try {
    for (const spec of CLIENTS.filter((c) => !ONLY || c.name === ONLY || c.bin === ONLY)) {
      try {
        rows.push(await runClient(spec, stub, work));
      } catch (err) {
        // One client's harness failure (sidecar did not start) is that client's row; the others still run.
        rows.push(
          check(spec.name, '-', false, `harness error: ${err instanceof Error ? err.message : String(err)}`),
        );
      }
      printRows(rows.slice(-1));
    }
  } finally {
    await stub.close();
    if (KEEP) process.stdout.write(`# work folder kept: ${work}\n`);
    else rmSync(work, { recursive: true, force: true });
  }
  process.exitCode = rows.every((r) => r.result === 'PASS') ? 0 : 1;
}

void main();
