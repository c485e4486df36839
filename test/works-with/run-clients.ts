/**
 * Works-with check for real coding CLIs (docs/WORKS_WITH.md). Not part of `npm test`: it needs the CLIs installed
 * from npm into a scratch folder outside the repository (`--install` puts them there) and a built sidecar
 * (`npm run build`).
 *
 *   node -r ./test/support/swc-register.js test/works-with/run-clients.ts --install [--only NAME]
 *   node -r ./test/support/swc-register.js test/works-with/run-clients.ts [--only NAME] [--clients-dir DIR] [--keep]
 *   node -r ./test/support/swc-register.js test/works-with/run-clients.ts --long [--turns N] [--window TOKENS] ...
 *   node -r ./test/support/swc-register.js test/works-with/run-clients.ts --client-ids [--only NAME|subagent]
 *   node -r ./test/support/swc-register.js test/works-with/run-clients.ts --native [--turns N] [--tui] [--keep]
 *
 * Short mode: each client runs one scripted, over-budget conversation (a first turn carrying a big pasted log, then
 * a second turn continuing it) in an isolated home, against the built sidecar in front of the stub backend, inside a
 * loopback-only network namespace. It passes when a request reached the sidecar, a compaction or an oversized spill
 * happened, and the stub's answer reached the client's output. Each client's real request shapes (no text, no key
 * values) are written to test/works-with/recordings/<client>-<version>.json.
 *
 * Header mode (issue 21, `--headers`): every setting docs/sessions.md shows, read from the page itself, run with its
 * real client (or SDK) behind the logging tap; a chat/messages/responses/count_tokens request without the header, or
 * with another value, fails the row, and `/guardian/usage` must show the main request. Controls (settings the page
 * warns against) must be caught. Then two developers through one sidecar with two clients.
 *
 * Client-id mode (issue 28, `--client-ids`): Claude Code, Codex, OpenCode and Qwen Code (with and without the
 * `${session_id}` setting docs/sessions.md shows) with no X-Guardian-Session configured, two developers per client
 * through one sidecar: each must be found at `/guardian/usage?session=<the id its client sent>` (read from the tap)
 * with that header as `session_source`, and the two stay apart (their ids, usage and archive runs). Then one Claude
 * Code turn in which the stub makes it start a sub-agent, to see whether it sends `x-claude-code-agent-id`.
 *
 * Native mode (issue 27, `--native [--turns N] [--tui]`): Codex with its built-in `openai` provider
 * (`openai_base_url` set to the sidecar, `model_auto_compact_token_limit = 6000`) through the built sidecar in front of
 * the strict stub, for `--turns` turns (default 5) of `codex exec` / `exec resume --last`: Codex compacts before every
 * turn after the first, by asking the server. Every turn must be answered, Codex must report at least 3 compactions
 * (as many as it asked for), the stub must never receive a compaction item, field or handle, and every request after
 * the first compaction must carry the fact planted on turn 1. `--tui` then runs Codex's TUI under tmux: two turns,
 * `/compact`, a third. What Codex sent and what the stub got go to recordings/native/codex-<version>.json.
 *
 * Long mode (issue 11): each client runs `--turns` turns (default 10), each continuing the conversation and pasting
 * ~17 KB of a different log or source file, the first also planting "Remember this: the deploy key is ZEBRA-7431."
 * The sidecar and the stub share one hard window, small enough that the session sent direct is refused by turn 5.
 * Every forwarded request is checked: the fact in each compacted one, the newest paste never spilled while an older
 * one stays whole, each turn answered, nothing failed open. Shapes go to recordings/long/<client>-<version>.json.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { CLIENTS, type ClientSpec } from './clients';
import { installClient, installedVersion } from './support/install';
import { LONG_HEADER, longTableRow, runLongClient, type LongRow } from './support/long-run';
import { reexecInLoopbackNetns } from './support/netns';
import { clientIdsMode } from './support/client-ids-mode';
import { headerMode } from './support/header-mode';
import { installPythonSdks } from './support/header-sdk';
import { nativeMode } from './support/native-run';
import { CACHE_DIR } from './support/paths';
import { LongRecordingBuilder, writeShortRecording } from './support/recording';
import { check, printRows, requestShape, today, type Row } from './support/report';
import { ANSWER, MODEL, lastLine, openClientSession, type Turn } from './support/session';
import type { TapRecord } from './support/tap';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const numberArg = (name: string, fallback: number): number => {
  const v = arg(name);
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} takes a positive whole number, not ${v}`);
  return n;
};
const CLIENTS_DIR = arg('--clients-dir') ?? process.env.CG_CLIENTS_DIR ?? join(CACHE_DIR, 'clients');
const ONLY = arg('--only');
const KEEP = process.argv.includes('--keep');
const LONG = process.argv.includes('--long');
const HEADERS = process.argv.includes('--headers');
const CLIENT_IDS = process.argv.includes('--client-ids');
const NATIVE = process.argv.includes('--native');
const TURN_TIMEOUT_MS = Number(process.env.CG_TURN_TIMEOUT_MS ?? 240000);
/** Short mode: guardian's window, small enough that every client's first request is over budget. */
const WINDOW = 8192;
/** Long mode: 10 turns, as issue 11 saw the failures over; the windows are each client's `longWindows` unless given. */
const LONG_TURNS = numberArg('--turns', 10);
const LONG_WINDOW = arg('--window') === undefined ? undefined : numberArg('--window', 0);
const RECORD = LONG_WINDOW === undefined && arg('--turns') === undefined;
const GENERATION_ROUTES = ['/v1/chat/completions', '/v1/messages', '/v1/responses'];

const selected = (): ClientSpec[] => CLIENTS.filter((c) => !ONLY || c.name === ONLY || c.bin === ONLY);

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

async function runShortClient(spec: ClientSpec, stub: StubBackend, work: string): Promise<Row> {
  const found = installedVersion(CLIENTS_DIR, spec);
  if (!found) return check(spec.name, '-', false, `not installed under ${CLIENTS_DIR} (run with --install)`);
  const session = await openClientSession({
    spec,
    bin: found.bin,
    stub,
    work,
    sidecarEnv: { GUARDIAN_NUM_CTX: String(WINDOW) },
    turnTimeoutMs: TURN_TIMEOUT_MS,
  });
  try {
    const prompts = [firstPrompt(), 'Continue: reply with one short line again.'];
    for (const [i, prompt] of prompts.entries()) {
      const turn = await session.turn(i + 1, prompt);
      if (!turn?.answered) break;
    }
    return judge(spec, found.version, {
      tap: session.tap.records,
      stats: session.turns.at(-1)?.stats ?? (await session.sidecar.stats()),
      turns: session.turns,
      stub,
      logLines: session.sidecar.logLines().length,
    });
  } finally {
    await session.close();
    if (!KEEP) rmSync(session.dir, { recursive: true, force: true });
  }
}

function judge(
  spec: ClientSpec,
  version: string,
  got: {
    tap: TapRecord[];
    stats: Record<string, unknown>;
    turns: Turn[];
    stub: StubBackend;
    logLines: number;
  },
): Row {
  const shapes = got.tap.map(requestShape);
  const file = writeShortRecording({ spec, version, window: WINDOW, shapes });
  const generations = shapes.filter((s) => GENERATION_ROUTES.includes(s.route));
  const compactions = Number(got.stats.compactions_performed ?? 0);
  const spills = Number(got.stats.oversized_spills ?? 0);
  const upstreamAnswers = got.stub.requests.filter((r) => r.route !== 'other' && !r.isSummary).length;
  const summaries = got.stub.requests.filter((r) => r.isSummary).length;
  const answered = got.turns.map((t) => t.answered);
  const routes = [...new Set(generations.map((g) => `${g.method} ${g.route}`))].join(', ');
  const detail =
    `turns ${got.turns.length} (answered ${answered.filter(Boolean).length}), client requests ${shapes.length} ` +
    `(generation ${generations.length}: ${routes || 'none'}), first body ${generations[0]?.body_bytes ?? 0} bytes / ` +
    `${generations[0]?.tools ?? 0} tools, compactions ${compactions}, spills ${spills}, summariser calls ${summaries}, ` +
    `upstream generation calls ${upstreamAnswers}, fail_open ${JSON.stringify(got.stats.fail_open)}, ` +
    `log lines ${got.logLines}; recording ${file}`;
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

async function shortMode(work: string, isolation: string): Promise<boolean> {
  const stub = await startStub({
    window: 262144,
    flavor: 'vllm',
    model: MODEL,
    reply: () => ({ text: `${ANSWER}: the stub backend answered.` }),
  });
  process.stdout.write(
    `# clients against the built sidecar (GUARDIAN_NUM_CTX=${WINDOW}) and the stub; isolation: ${isolation}\n`,
  );
  const rows: Row[] = [];
  try {
    for (const spec of selected()) {
      try {
        rows.push(await runShortClient(spec, stub, work));
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
  }
  return rows.every((r) => r.result === 'PASS');
}

async function longMode(work: string, isolation: string): Promise<boolean> {
  process.stdout.write(
    `# long sessions: ${LONG_TURNS} turns of ~17 KB pastes, fact on turn 1; sidecar and stub window ` +
      `${LONG_WINDOW ?? "each client's longWindows"}; ` +
      `isolation: ${isolation}\n`,
  );
  const rows: LongRow[] = [];
  const failed: string[] = [];
  for (const spec of selected()) {
    const found = installedVersion(CLIENTS_DIR, spec);
    if (!found) {
      failed.push(`${spec.name}: not installed under ${CLIENTS_DIR} (run with --install)`);
      continue;
    }
    const recorder = new LongRecordingBuilder(spec, found.version);
    for (const window of LONG_WINDOW ? [LONG_WINDOW] : spec.longWindows) {
      try {
        const row = await runLongClient({
          spec,
          bin: found.bin,
          version: found.version,
          work,
          window,
          turns: LONG_TURNS,
          turnTimeoutMs: TURN_TIMEOUT_MS,
          keep: KEEP,
          checkDirect: LONG_WINDOW === undefined,
          recorder,
        });
        rows.push(row);
        process.stdout.write(
          `${today()}\t${row.client}\t${row.version}\t${window}\t${row.failures.join('; ') || 'PASS'}\n`,
        );
        for (const d of row.detail) process.stdout.write(`#   ${d}\n`);
        process.stdout.write(`#   took ${row.minutes.toFixed(1)} min\n`);
      } catch (err) {
        // One session's harness failure is that session's failure; the others still run.
        failed.push(
          `${spec.name} at ${window}: harness error: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
    // Only a run at the default windows and turns replaces the checked-in recording; others are explorations.
    if (recorder.size > 0 && RECORD) process.stdout.write(`#   recording ${recorder.write(today())}\n`);
  }
  process.stdout.write(`\n${LONG_HEADER}\n${rows.map((r) => longTableRow(r)).join('\n')}\n`);
  for (const f of failed) process.stdout.write(`# ${f}\n`);
  return failed.length === 0 && rows.length > 0 && rows.every((r) => r.failures.length === 0);
}

async function main(): Promise<void> {
  if (process.argv.includes('--install')) {
    // Before the network namespace: npm needs the registry. Installs and stops; run again without --install.
    for (const spec of selected()) process.stdout.write(`${installClient(CLIENTS_DIR, spec)}\n`);
    if (!ONLY) process.stdout.write(`${installPythonSdks()}\n`);
    return;
  }
  const isolation = reexecInLoopbackNetns();
  const work = mkdtempSync(join(tmpdir(), 'cg-works-with-clients-'));
  let ok = false;
  try {
    const opts = { clientsDir: CLIENTS_DIR, work, turnTimeoutMs: TURN_TIMEOUT_MS };
    if (NATIVE) {
      ok = await nativeMode({
        ...opts,
        turns: numberArg('--turns', 5),
        keep: KEEP,
        record: arg('--turns') === undefined,
        tui: process.argv.includes('--tui'),
        isolation: isolation.why,
      });
    } else if (HEADERS) ok = await headerMode({ ...opts, only: ONLY, isolation: isolation.why });
    else if (CLIENT_IDS) ok = await clientIdsMode({ ...opts, only: ONLY, isolation: isolation.why });
    else ok = LONG ? await longMode(work, isolation.why) : await shortMode(work, isolation.why);
  } finally {
    if (KEEP) process.stdout.write(`# work folder kept: ${work}\n`);
    else rmSync(work, { recursive: true, force: true });
  }
  process.exitCode = ok ? 0 : 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`run-clients: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 2;
});
