import { rmSync } from 'node:fs';

import { startStub } from '@guardian/stub-backend';

import { CLIENTS, type ClientSpec } from '../clients';
import { installedVersion } from './install';
import {
  analyseNative,
  codexBuiltIn,
  NATIVE_COMPACT_LIMIT,
  NATIVE_WINDOW,
  nativeDetail,
  nativeFailures,
  nativePrompt,
} from './native-check';
import { runCodexTui } from './native-tui';
import { writeNativeRecording } from './recording';
import { check, printRows, requestShape, type Row } from './report';
import { ANSWER, MODEL, lastLine, openClientSession, type Turn } from './session';

/** `codex exec` then `codex exec resume --last`, `turns` times, through the sidecar; one row. */
async function runCodexExec(opts: {
  spec: ClientSpec;
  bin: string;
  version: string;
  work: string;
  turns: number;
  turnTimeoutMs: number;
  keep: boolean;
  record: boolean;
}): Promise<Row> {
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
    label: 'native',
  });
  try {
    for (let n = 1; n <= opts.turns; n++) {
      const turn = await session.turn(n, nativePrompt(n));
      process.stderr.write(`# codex (built-in provider) turn ${n}/${opts.turns}: ${describeTurn(turn)}\n`);
      if (!turn || turn.timedOut) break;
    }
  } finally {
    await session.close();
  }
  try {
    const a = analyseNative(session.turns, session.tap.records, stub.requests);
    // Only a run of the default length replaces the checked-in recording; others are explorations.
    const file = !opts.record
      ? 'not written (--turns given)'
      : writeNativeRecording({
          spec: opts.spec,
          version: opts.version,
          window: NATIVE_WINDOW,
          limit: NATIVE_COMPACT_LIMIT,
          client: session.tap.records.map(requestShape),
          forwarded: stub.requests.map((r) =>
            requestShape({
              method: r.method,
              url: r.path,
              headers: r.headers,
              body: r.body,
              status: r.status,
            }),
          ),
        });
    const failures = nativeFailures(a, opts.turns);
    return check(
      'codex exec (built-in openai provider)',
      opts.version,
      failures.length === 0,
      failures.join('; '),
      `${nativeDetail(a)}; recording ${file}`,
    );
  } finally {
    await stub.close();
    if (!opts.keep) rmSync(session.dir, { recursive: true, force: true });
  }
}

const describeTurn = (turn: Turn | undefined): string =>
  !turn
    ? 'cannot continue'
    : turn.answered
      ? `answered in ${(turn.ms / 1000).toFixed(1)} s`
      : turn.timedOut
        ? 'TIMED OUT'
        : `not answered (exit ${String(turn.code)}: ${lastLine(turn.stderr)})`;

/**
 * `--native`: Codex's `exec` across its own auto-compaction (`--turns`, default 5: turns 2 to 5 each compact first),
 * then, with `--tui`, its TUI under tmux for two turns and a `/compact`. Returns true when every row passed.
 */
export async function nativeMode(opts: {
  clientsDir: string;
  work: string;
  turns: number;
  turnTimeoutMs: number;
  keep: boolean;
  /** Write recordings/native/ (a run of the default length). */
  record: boolean;
  tui: boolean;
  isolation: string;
}): Promise<boolean> {
  const codex = CLIENTS.find((c) => c.name === 'codex')!;
  const found = installedVersion(opts.clientsDir, codex);
  process.stdout.write(
    `# Codex's built-in openai provider through the built sidecar and the strict stub (window ${NATIVE_WINDOW}, ` +
      `model_auto_compact_token_limit ${NATIVE_COMPACT_LIMIT}); isolation: ${opts.isolation}\n`,
  );
  if (!found) {
    printRows([check('codex', '-', false, `not installed under ${opts.clientsDir} (run with --install)`)]);
    return false;
  }
  const spec = codexBuiltIn(NATIVE_COMPACT_LIMIT);
  const rows: Row[] = [];
  const run = async (name: string, fn: () => Promise<Row>): Promise<void> => {
    try {
      rows.push(await fn());
    } catch (err) {
      // A harness failure (the sidecar did not start, tmux missing) is that row's failure; the next still runs.
      rows.push(
        check(
          name,
          found.version,
          false,
          `harness error: ${err instanceof Error ? err.message : String(err)}`,
        ),
      );
    }
    printRows(rows.slice(-1));
  };
  await run('codex exec (built-in openai provider)', () =>
    runCodexExec({ spec, bin: found.bin, version: found.version, ...opts }),
  );
  if (opts.tui)
    await run('codex TUI under tmux (built-in openai provider)', () =>
      runCodexTui({ spec, bin: found.bin, version: found.version, ...opts }),
    );
  return rows.every((r) => r.result === 'PASS');
}
