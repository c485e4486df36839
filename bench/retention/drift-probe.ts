// The memo drift probe (issue 17 §2): `npm run probe:drift -- --upstream URL --model M [--window N]`.
// Five facts are stated in the first three turns of a 30-turn conversation. After every compaction it checks which
// facts that summary, and the request guardian forwarded, still hold, with the summary memo on (each stretch's
// summary extends the last one: early facts could erode) and off (every compaction summarises the whole evicted
// prefix afresh), and prints facts kept, summariser calls and summariser input characters for both. It talks only
// to the upstream named (the project's stub, started here, when none is) and writes only to a temporary folder.
import { filler } from '../support';
import {
  commonOptions,
  factValue,
  openUpstream,
  parseOptions,
  present,
  sendTurn,
  settingsLine,
  startThrough,
  type ChatMessage,
  type CommonOptions,
  type Upstream,
} from './harness';

export const DRIFT_TURNS = 30;
const FACTS = [
  (v: string) => `The billing database lives on host ${v}.`,
  (v: string) => `Our staging cluster is called ${v}.`,
  (v: string) => `The release we are preparing is ${v}.`,
  (v: string) => `The customer who reported the outage is account ${v}.`,
  (v: string) => `The feature flag for the new checkout is ${v}.`,
];
/** Which turn states which facts: all five within the first three turns (the seed's probe). */
const PLANTED: Record<number, number[]> = { 1: [0, 1], 2: [2, 3], 3: [4] };

export interface DriftRow {
  turn: number;
  /** False when this turn's compaction failed open (a summary too short, a timeout): the request went as sent. */
  compacted: boolean;
  /** Facts the summary written on this turn holds. */
  summary: string[];
  /** Facts the request forwarded on this turn holds (summary, pins, kept tail). */
  forwarded: string[];
}

export interface DriftRun {
  memo: boolean;
  answered: number;
  rows: DriftRow[];
  summariserCalls: number;
  /** Characters of the summariser requests' bodies, as sent upstream. */
  summariserChars: number;
  /** Facts the last summary holds, and the last forwarded request. */
  lastSummary: string[];
  lastForwarded: string[];
  /** Fewest facts any compacted request held. */
  leastForwarded: number;
}

export interface DriftResult {
  facts: string[];
  turns: number;
  on: DriftRun;
  off: DriftRun;
}

function conversation(facts: readonly string[]): { system: string; user: string[]; assistant: string[] } {
  const user: string[] = [];
  const assistant: string[] = [];
  for (let t = 1; t <= DRIFT_TURNS; t++) {
    const planted = (PLANTED[t] ?? []).map((i) => FACTS[i]!(facts[i]!));
    user.push([`Step ${t} of the migration.`, ...planted, filler(500, t * 13)].join('\n'));
    assistant.push(`Step ${t}: ${filler(1100, t * 29 + 5)}`);
  }
  return { system: 'You are a careful engineer helping with a billing service migration.', user, assistant };
}

async function runOnce(
  upstream: Upstream,
  opts: CommonOptions,
  facts: string[],
  memo: boolean,
): Promise<DriftRun> {
  const through = await startThrough(upstream, opts, { GUARDIAN_SUMMARY_MEMO: memo ? '1' : '0' });
  const conv = conversation(facts);
  const history: ChatMessage[] = [{ role: 'system', content: conv.system }];
  const run: DriftRun = {
    memo,
    answered: 0,
    rows: [],
    summariserCalls: 0,
    summariserChars: 0,
    lastSummary: [],
    lastForwarded: [],
    leastForwarded: facts.length,
  };
  try {
    for (let t = 1; t <= DRIFT_TURNS; t++) {
      history.push({ role: 'user', content: conv.user[t - 1]! });
      const turn = await sendTurn({ base: `${through.url}/v1`, tap: through.tap }, opts, history, 16);
      if (turn.status === 200) run.answered += 1;
      // The conversation is fixed, whatever the model answered: every backend sees the same history.
      history.push({ role: 'assistant', content: conv.assistant[t - 1]! });
      run.summariserCalls += turn.summaries.length;
      run.summariserChars += turn.summaries.reduce((n, c) => n + c.body.length, 0);
      const forwarded = turn.forwarded === undefined ? [] : present(turn.forwarded, facts);
      const compacted = turn.forwarded?.includes('## Context Guardian: archived conversation') ?? false;
      if (compacted) run.leastForwarded = Math.min(run.leastForwarded, forwarded.length);
      run.lastForwarded = forwarded;
      const summary = turn.summaries.at(-1);
      if (!summary) continue;
      run.lastSummary = present(summary.text, facts);
      run.rows.push({ turn: t, compacted, summary: run.lastSummary, forwarded });
    }
    return run;
  } finally {
    await through.close();
  }
}

/** Runs the probe with the memo on, then off, each through a fresh sidecar. */
export async function driftProbe(opts: CommonOptions, upstream: Upstream): Promise<DriftResult> {
  const facts = FACTS.map((_, i) => factValue(1, i));
  const on = await runOnce(upstream, opts, facts, true);
  const off = await runOnce(upstream, opts, facts, false);
  return { facts, turns: DRIFT_TURNS, on, off };
}

export function driftReport(r: DriftResult, opts: CommonOptions, backend: string): string[] {
  const n = r.facts.length;
  const lost = (row: DriftRow): string => {
    const gone = r.facts.filter((f) => !row.summary.includes(f));
    if (gone.length === 0) return '';
    return gone.length === n ? '; the summary holds none' : `; the summary lost ${gone.join(', ')}`;
  };
  const lines = [
    `memo drift probe ${new Date().toISOString()}; upstream ${backend}, model ${opts.model}; ${settingsLine(opts)}`,
    `${r.turns} turns, ${n} facts stated in turns 1-3: ${r.facts.join(', ')}`,
  ];
  for (const run of [r.on, r.off]) {
    lines.push(
      `memo ${run.memo ? 'on ' : 'off'}: answered ${run.answered}/${r.turns}; summaries ${run.rows.length}, summariser calls ${run.summariserCalls}, summariser input ${run.summariserChars.toLocaleString('en-US')} chars; facts kept: last summary ${run.lastSummary.length}/${n}, last forwarded request ${run.lastForwarded.length}/${n}, fewest in any compacted request ${run.leastForwarded}/${n}`,
    );
    for (const row of run.rows)
      lines.push(
        `  turn ${String(row.turn).padStart(2)}: summary ${row.summary.length}/${n}, forwarded ${row.forwarded.length}/${n}${row.compacted ? '' : ' (forwarded without a summary block)'}${lost(row)}`,
      );
  }
  return lines;
}

const probeOptions = commonOptions.extend({ window: commonOptions.shape.window.default(8192) });

async function main(): Promise<void> {
  const opts = parseOptions(probeOptions, process.argv.slice(2), ['json']);
  const upstream = await openUpstream(opts);
  try {
    const result = await driftProbe(opts, upstream);
    process.stdout.write(
      opts.json
        ? `${JSON.stringify(result, null, 2)}\n`
        : `${driftReport(result, opts, upstream.label).join('\n')}\n`,
    );
  } finally {
    await upstream.close();
  }
}

if (require.main === module) {
  main().then(
    // The in-process sidecar's keep-alive timers must not hold the process once the report is out.
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`probe:drift failed: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
