import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { startStub } from '@guardian/stub-backend';

import type { ClientSpec } from '../clients';
import { analyseNative, nativeDetail, nativeFailures, nativePrompt, NATIVE_WINDOW } from './native-check';
import { check, type Row } from './report';
import { ANSWER, MODEL, openClientSession, type Turn } from './session';

/**
 * Codex's TUI under tmux (issue 27: "the TUI under tmux"): signed in with an API key as a user does (`codex login
 * --with-api-key`), then two typed turns, `/compact`, and a third turn, each waited for on the screen (the stub's
 * answer, Codex's "Context compacted" line), never on a clock. The same checks as `exec` apply to what it sent.
 */
export async function runCodexTui(opts: {
  spec: ClientSpec;
  bin: string;
  version: string;
  work: string;
  turnTimeoutMs: number;
  keep: boolean;
}): Promise<Row> {
  if (spawnSync('tmux', ['-V']).status !== 0) throw new Error('tmux is not installed (apt-get install tmux)');
  const stub = await startStub({
    window: NATIVE_WINDOW,
    flavor: 'vllm',
    model: MODEL,
    reply: () => ({ text: `${ANSWER}: the stub backend answered.` }),
  });
  const session = await openClientSession({
    spec: opts.spec,
    bin: opts.bin,
    stub,
    work: opts.work,
    sidecarEnv: {},
    turnTimeoutMs: opts.turnTimeoutMs,
    label: 'tui',
  });
  // A tmux server of its own (-L), started with the client's environment, so the TUI inherits only that.
  const socket = `cg-native-${process.pid}`;
  const env: NodeJS.ProcessEnv = { ...session.env, TERM: 'xterm-256color' };
  const tmux = (...args: string[]): string => {
    const r = spawnSync('tmux', ['-L', socket, ...args], { env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`tmux ${args[0]}: ${r.stderr.trim()}`);
    return r.stdout;
  };
  const screen = (): string => tmux('capture-pane', '-p', '-J', '-S', '-', '-t', 'cg');
  const count = (re: RegExp): number => (screen().match(re) ?? []).length;
  const waitFor = async (what: string, done: () => boolean): Promise<void> => {
    const giveUp = Date.now() + opts.turnTimeoutMs; // a hang guard, never the verdict
    while (!done()) {
      if (Date.now() > giveUp) throw new Error(`the TUI never showed ${what}`);
      await sleep(200);
    }
  };
  const answers = new RegExp(`${ANSWER}:`, 'g');
  const compacted = /Context compacted/g;
  const turns: Turn[] = [];
  try {
    const login = spawnSync(opts.bin, ['login', '--with-api-key'], {
      env: session.env,
      cwd: session.project,
      input: 'dummy-key',
      encoding: 'utf8',
    });
    if (login.status !== 0) throw new Error(`codex login --with-api-key: exit ${String(login.status)}`);
    tmux('new-session', '-d', '-s', 'cg', '-x', '160', '-y', '50', '-c', session.project, opts.bin);
    // What the pane shows now (not its history): the chat view is ready when its composer and its status line,
    // which names the model, are on screen.
    const visible = (): string => tmux('capture-pane', '-p', '-J', '-t', 'cg');
    const ready = (v: string): boolean => /Ask Codex to do anything/.test(v) && v.includes(MODEL);
    await waitFor('its prompt or its sign-in', () => {
      const v = visible();
      return ready(v) || /Sign in with ChatGPT/.test(v);
    });
    // 0.171 shows the sign-in choice even with an API key saved; a user picks "Sign in another way", "Use an OpenAI
    // API key", and types it. Each key waits for the screen it belongs to.
    if (!ready(visible())) {
      tmux('send-keys', '-t', 'cg', 'Down', 'Down', 'Enter');
      await waitFor('the API key choice', () => /Use an OpenAI API key/.test(visible()));
      tmux('send-keys', '-t', 'cg', 'Enter');
      await waitFor('the API key field', () => /Paste or type your API key/.test(visible()));
      tmux('send-keys', '-t', 'cg', '-l', 'dummy-key');
      tmux('send-keys', '-t', 'cg', 'Enter');
    }
    await waitFor('its prompt', () => ready(visible()));
    const type = async (n: number, text: string, until: () => boolean): Promise<void> => {
      const tapFrom = session.tap.records.length;
      const stubFrom = stub.requests.length;
      const started = Date.now();
      // The text is shown in the composer before Enter submits it: Codex holds fast typing as a paste, and an Enter
      // inside that would be a newline.
      const head = text.slice(0, 24);
      const shownBefore = screen().split(head).length;
      tmux('send-keys', '-t', 'cg', '-l', text);
      await waitFor('the typed text', () => screen().split(head).length > shownBefore);
      tmux('send-keys', '-t', 'cg', 'Enter');
      let timedOut = false;
      try {
        await waitFor(`an answer to turn ${n}`, until);
      } catch (err) {
        timedOut = true;
        process.stderr.write(`# ${err instanceof Error ? err.message : String(err)}\n`);
      }
      const shown = screen();
      turns.push({
        n,
        code: 0,
        stdout: shown,
        stderr: '',
        timedOut,
        answered: !timedOut,
        ms: Date.now() - started,
        tapFrom,
        tapTo: session.tap.records.length,
        stubFrom,
        stubTo: stub.requests.length,
        stats: await session.sidecar.stats(),
      });
      process.stderr.write(`# codex TUI step ${n}: ${timedOut ? 'TIMED OUT' : 'shown'}\n`);
    };
    for (const n of [1, 2]) {
      const seen = count(answers);
      await type(n, nativePrompt(n), () => count(answers) > seen);
    }
    const seenCompactions = count(compacted);
    await type(3, '/compact', () => count(compacted) > seenCompactions);
    const seen = count(answers);
    await type(4, nativePrompt(4), () => count(answers) > seen);
    writeFileSync(join(session.dir, 'tui-screen.txt'), screen());
  } finally {
    spawnSync('tmux', ['-L', socket, 'kill-server'], { env });
    // The TUI starts an app-server daemon of its own (a copy of its binary under CODEX_HOME) that outlives it and
    // tmux: stopped as Codex stops it, then what is left of it (its pid-update loop), so nothing of the run stays.
    spawnSync(opts.bin, ['app-server', 'daemon', 'stop'], {
      env: session.env,
      cwd: session.project,
      stdio: 'ignore',
    });
    stopProcessesUnder(session.dir);
    await session.close();
  }
  try {
    const a = analyseNative(turns, session.tap.records, stub.requests);
    // The screen keeps every line, so only the last capture counts Codex's compactions (the /compact step's too).
    const last = turns.at(-1);
    const shownCompactions = last ? (last.stdout.match(compacted) ?? []).length : 0;
    a.codexCompacted = turns.map((t, i) => (i === turns.length - 1 ? shownCompactions : 0));
    const failures = nativeFailures(a, 4);
    return check(
      'codex TUI under tmux (built-in openai provider)',
      opts.version,
      failures.length === 0,
      failures.join('; '),
      nativeDetail(a),
    );
  } finally {
    await stub.close();
    if (!opts.keep) rmSync(session.dir, { recursive: true, force: true });
  }
}

/** SIGTERM to every process whose command line runs a program under `dir` (this run's own folder, nothing else). */
function stopProcessesUnder(dir: string): void {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      // Gone since the listing, or not ours to read: either way nothing of this run.
      continue;
    }
    if (cmd.startsWith(`${dir}/`)) process.kill(Number(pid), 'SIGTERM');
  }
}
