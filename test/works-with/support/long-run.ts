import { rmSync } from 'node:fs';

import { startStub } from '@guardian/stub-backend';

import type { ClientSpec } from '../clients';
import { analyseLong, type Forwarded, type LongAnalysis } from './long-check';
import { longPrompt } from './pastes';
import type { LongRecordingBuilder } from './recording';
import { today } from './report';
import { ANSWER, MODEL, lastLine, openClientSession, type Turn } from './session';

/** Issue 11: "a window small enough that direct fails by turn 5". */
export const DIRECT_FAILS_BY = 5;

/** One client's long session, reduced to the figures of the docs table and the failures found. */
export interface LongRow {
  client: string;
  version: string;
  routes: string;
  window: number;
  directFailsAt: number | undefined;
  turns: number;
  answered: number;
  forwarded: number;
  compacted: number;
  /** Compacted requests whose client request carried the fact. */
  factDue: number;
  factCarried: number;
  newestSpilled: number;
  newestSpilledOlderWhole: number;
  failOpen: Record<string, number>;
  refused: number;
  /** Every summariser call the stub answered in the session, in the foreground or behind an answer. */
  summariserCalls: number;
  /** Turns' requests that waited on a summariser call in the foreground (`summary_waits`). */
  waited: number;
  minutes: number;
  failures: string[];
  /** Per-turn lines for the log: counts and flags only, never text. */
  detail: string[];
}

const sumFailOpen = (stats: Record<string, unknown>): Record<string, number> => {
  const out: Record<string, number> = {};
  const f = stats.fail_open;
  if (f && typeof f === 'object')
    for (const [k, v] of Object.entries(f as Record<string, unknown>)) if (Number(v) > 0) out[k] = Number(v);
  return out;
};
const total = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);
const turnsList = (xs: readonly number[]): string => (xs.length ? xs.join(',') : '-');

function turnLine(turn: Turn, a: LongAnalysis, prevFailOpen: number): string {
  const fwd = a.forwarded.filter((f) => f.turn === turn.n);
  const direct = a.directPerTurn[turn.n - 1] ?? 0;
  const parts = fwd.map((f: Forwarded) => {
    const what = f.carried.summaryBlock ? 'summary' : f.compacted ? 'spill only' : 'as sent';
    const flags = [
      `${f.tokens} tok`,
      what,
      f.compacted || f.clientHadFact ? `fact ${f.carried.fact ? 'yes' : 'NO'}` : 'fact n/a',
      `whole [${turnsList(f.carried.whole)}]`,
      `spilled [${turnsList(f.carried.spilled)}]`,
      ...(f.status >= 400 ? [`refused ${f.status}`] : []),
    ];
    return `(${flags.join(', ')})`;
  });
  const failOpen = total(sumFailOpen(turn.stats)) - prevFailOpen;
  return (
    `turn ${turn.n}: ${turn.answered ? 'answered' : turn.timedOut ? 'TIMED OUT' : `NOT answered (exit ${String(turn.code)}: ${lastLine(turn.stderr)})`} ` +
    `in ${(turn.ms / 1000).toFixed(1)} s; direct ${direct} tok; forwarded ${fwd.length}: ${parts.join(' ') || 'none'}` +
    (failOpen > 0 ? `; fail_open +${failOpen}` : '')
  );
}

/**
 * Runs one client through a long conversation (issue 11, Deliver 4): `turns` turns, each continuing the previous one
 * and pasting ~17 KB, the fact planted on turn 1, against a sidecar and a stub that share one hard `window`. Then
 * checks every forwarded request: the fact in each compacted one, the newest paste never spilled while an older one
 * stays whole, every turn answered, nothing failed open, and that the same session sent direct would have been refused
 * by turn {@link DIRECT_FAILS_BY}.
 */
export async function runLongClient(opts: {
  spec: ClientSpec;
  bin: string;
  version: string;
  work: string;
  window: number;
  turns: number;
  turnTimeoutMs: number;
  keep: boolean;
  /**
   * Whether the window must be one at which the session sent direct fails by turn {@link DIRECT_FAILS_BY}: true at
   * the clients' own long windows; a window asked for (`--window`) is taken as it is.
   */
  checkDirect: boolean;
  /** Receives the session's request shapes for the client's long recording. */
  recorder: LongRecordingBuilder;
}): Promise<LongRow> {
  const { spec, window } = opts;
  const started = Date.now();
  // The backend's window is the sidecar's: what the stub refuses is what a real backend of that size would refuse.
  const stub = await startStub({
    window,
    flavor: 'vllm',
    model: MODEL,
    reply: () => ({ text: `${ANSWER}: the stub backend answered.` }),
  });
  const session = await openClientSession({
    spec,
    bin: opts.bin,
    stub,
    work: opts.work,
    sidecarEnv: { GUARDIAN_NUM_CTX: String(window) },
    turnTimeoutMs: opts.turnTimeoutMs,
    label: String(window),
  });
  try {
    for (let n = 1; n <= opts.turns; n++) {
      const turn = await session.turn(n, longPrompt(n, opts.turns));
      process.stderr.write(
        `# ${spec.name} turn ${n}/${opts.turns}: ${turn ? (turn.answered ? 'answered' : 'not answered') : 'cannot continue'}\n`,
      );
      // A client that cannot continue, or hangs, would only repeat the same failure for every turn left.
      if (!turn || turn.timedOut) break;
    }
  } finally {
    await session.close();
  }
  try {
    const turns = session.turns;
    const a = analyseLong({
      turns,
      tap: session.tap.records,
      stub: stub.requests,
      totalTurns: opts.turns,
      window,
    });
    const finalStats = turns.at(-1)?.stats ?? {};
    const failOpen = sumFailOpen(finalStats);
    const compacted = a.forwarded.filter((f) => f.compacted);
    const due = compacted.filter((f) => f.clientHadFact);
    const lost = due.filter((f) => !f.carried.fact);
    const newest = a.forwarded.filter((f) => f.newestSpilled);
    const newestOlderWhole = a.forwarded.filter((f) => f.newestSpilledOlderWhole);
    const answered = turns.filter((t) => t.answered).length;
    const routes = [...new Set(a.clientRequests.map((c) => `${c.tap.method} ${c.tap.url}`))].join(', ');

    const failures: string[] = [];
    if (a.clientRequests.length === 0) failures.push('no generation request reached the sidecar');
    if (opts.checkDirect && (a.directFailsAt === undefined || a.directFailsAt > DIRECT_FAILS_BY))
      failures.push(
        `window ${window} too large: direct ${a.directFailsAt ? `fails only at turn ${a.directFailsAt}` : 'never fails'}`,
      );
    if (turns.length < opts.turns) failures.push(`ran ${turns.length} of ${opts.turns} turns`);
    if (answered < turns.length) {
      const bad = turns.filter((t) => !t.answered).map((t) => t.n);
      failures.push(`turns ${bad.join(',')} not answered`);
    }
    if (compacted.length === 0) failures.push('nothing was compacted');
    if (lost.length > 0)
      failures.push(
        `fact missing in ${lost.length} of ${due.length} compacted requests (turns ${[...new Set(lost.map((f) => f.turn))].join(',')})`,
      );
    if (newestOlderWhole.length > 0)
      failures.push(
        `newest message spilled while an older paste stayed whole in ${newestOlderWhole.length} requests (turns ${[...new Set(newestOlderWhole.map((f) => f.turn))].join(',')})`,
      );
    if (total(failOpen) > 0) failures.push(`fail_open ${JSON.stringify(failOpen)}`);

    let prev = 0;
    let waitsBefore = 0;
    const detail = turns.map((t) => {
      const waits = Number(t.stats.summary_waits ?? 0);
      const summaries = stub.requests.slice(t.stubFrom, t.stubTo).filter((r) => r.isSummary).length;
      const line = `${turnLine(t, a, prev)}; summariser calls ${summaries}, waited ${waits - waitsBefore}`;
      prev = total(sumFailOpen(t.stats));
      waitsBefore = waits;
      return line;
    });
    if (a.clientRequests.length > 0)
      opts.recorder.add({
        window,
        stubWindow: stub.window,
        turns: opts.turns,
        directFailsAt: a.directFailsAt,
        tap: session.tap.records,
        turnOf: (i) => turns.find((t) => i >= t.tapFrom && i < t.tapTo)?.n ?? 0,
        clientRequests: a.clientRequests,
        forwarded: a.forwarded,
      });
    return {
      client: spec.name,
      version: opts.version,
      routes,
      window,
      directFailsAt: a.directFailsAt,
      turns: turns.length,
      answered,
      forwarded: a.forwarded.length,
      compacted: compacted.length,
      factDue: due.length,
      factCarried: due.length - lost.length,
      newestSpilled: newest.length,
      newestSpilledOlderWhole: newestOlderWhole.length,
      failOpen,
      refused: a.refused,
      // The stub's own count: a call behind the last answer is in no turn's slice of its records.
      summariserCalls: stub.requests.filter((r) => r.isSummary).length,
      waited: Number(finalStats.summary_waits ?? 0),
      minutes: (Date.now() - started) / 60000,
      failures,
      detail: [`direct tokens per turn (window ${window}): ${a.directPerTurn.join(', ')}`, ...detail],
    };
  } finally {
    await stub.close();
    if (!opts.keep) rmSync(session.dir, { recursive: true, force: true });
  }
}

export const LONG_HEADER =
  '| date | client | version | route | window | direct fails at turn | turns (answered) | forwarded | compacted | fact in compacted | newest spilled (older whole) | summariser calls (per compacted) | waited on a summary | fail_open | refused by backend | result |\n' +
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |';

/** One docs-table row (Markdown), from figures only. */
export function longTableRow(r: LongRow, date = today()): string {
  const fo = total(r.failOpen);
  return (
    `| ${date} | ${r.client} | ${r.version} | ${r.routes || '-'} | ${r.window} | ${r.directFailsAt ?? 'never'} | ` +
    `${r.turns} (${r.answered}) | ${r.forwarded} | ${r.compacted} | ${r.factCarried} of ${r.factDue} | ` +
    `${r.newestSpilled} (${r.newestSpilledOlderWhole}) | ` +
    `${r.summariserCalls} (${r.compacted > 0 ? (r.summariserCalls / r.compacted).toFixed(2) : '-'}) | ${r.waited} | ` +
    `${fo > 0 ? `${fo} ${JSON.stringify(r.failOpen)}` : '0'} | ${r.refused} | ` +
    `${r.failures.length ? `FAIL: ${r.failures.join('; ')}` : 'PASS'} |`
  );
}
