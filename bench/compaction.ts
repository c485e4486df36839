// Compaction benchmarks (issue 3 "Tests and figures"): (a) the decision cost for a 128k-token request (parse,
// estimate, plan; no summariser), and the cost of the digests and prefix hashes the memo needs; (b) a memo-hit
// turn vs pass-through through the sidecar; (c) memo on vs off on a 20-turn replay (compaction-e2e.ts).
// Knobs: BENCH_DECISION_RUNS (300), BENCH_MEMO_HIT_REQUESTS (300 per target).
import {
  computeBudget,
  extractPins,
  planCompaction,
  prefixHashes,
  requestChars,
  tokensForChars,
  type Counter,
  type PlanInput,
} from '@guardian/compaction';

import { chatAdapter } from '../apps/guardian/src/formats/chat.adapter';
import { fillDigests, type ParsedConversation } from '../apps/guardian/src/formats/format-adapter';
import { memoHitBench, replayBench } from './compaction-e2e';
import { chatRequest, type SessionShape } from './conversation';
import { envNumber, int, machineLine, ms, summarise, timeMany, writeResults, type Summary } from './support';

const SHAPE: SessionShape = { userChars: 900, toolResultChars: 3200, answerChars: 700, seed: 11 };
const COUNTER: Counter = { charsPerToken: 3.5, factor: 1 };
const WINDOW = 131_072;

/** The smallest session of SHAPE turns whose estimate reaches `tokens`. */
function requestOf(tokens: number): { body: string; turns: number; estimate: number } {
  for (let turns = 1; ; turns += 1) {
    const body = chatRequest(turns, SHAPE);
    const conv = chatAdapter.parse(JSON.parse(body), { countTools: true })!;
    const estimate = tokensForChars(requestChars(conv.messages, conv.fixedChars), COUNTER);
    if (estimate >= tokens) return { body, turns, estimate };
  }
}

function parse(json: unknown): ParsedConversation {
  const conv = chatAdapter.parse(json, { countTools: true });
  if (!conv) throw new Error('the chat adapter did not understand the benchmark request');
  return conv;
}

/** What the sidecar does for every owned request before any I/O: parse, estimate, budget, plan. */
function decide(json: unknown, memo?: PlanInput['memo']) {
  const conv = parse(json);
  const tokens = tokensForChars(requestChars(conv.messages, conv.fixedChars), COUNTER);
  const budget = computeBudget(WINDOW, 0.85, 8192);
  return planCompaction({
    messages: conv.messages,
    fixedChars: conv.fixedChars,
    counter: COUNTER,
    budget,
    keep: { fraction: 0.2 },
    requestTokens: tokens,
    memo,
  });
}

function row(name: string, s: Summary, target?: number): string {
  const mark =
    target === undefined ? '' : `  (target <= ${target} ms: ${s.p50 <= target ? 'met' : 'MISSED'} at p50)`;
  return `${name.padEnd(58)} p50 ${ms(s.p50)}  p99 ${ms(s.p99)}${mark}`;
}

function decisionBench(runs: number): string[] {
  const req = requestOf(128_000);
  const json = JSON.parse(req.body) as unknown;
  const first = decide(json);
  const cut = first.action === 'compact' ? first.cut : 0;
  const memo = { cut: Math.max(1, cut - 40), summaryTokens: 600 };
  const reused = decide(json, memo);
  const warm = Math.min(50, runs);
  const jsonParse = summarise(timeMany(runs, warm, () => JSON.parse(req.body)));
  const plain = summarise(timeMany(runs, warm, () => decide(json)));
  const withMemo = summarise(timeMany(runs, warm, () => decide(json, memo)));
  const conv = parse(json);
  const hashes = summarise(
    timeMany(runs, warm, () => {
      for (const m of conv.messages) m.digest = '';
      fillDigests(conv);
      prefixHashes(conv.messages);
    }),
  );
  const keep = conv.messages.map((_m, i) => i).filter((i) => i === 0 || i >= cut);
  const pins = summarise(
    timeMany(runs, warm, () => {
      for (let i = 0; i < cut; i += 1) if (conv.messages[i]?.userTyped) extractPins(conv.messages[i]!.text);
    }),
  );
  const rebuild = summarise(
    timeMany(runs, warm, () =>
      JSON.stringify(chatAdapter.rebuild(conv, { keep, summaryBlock: 'Summary of the earlier turns.' })),
    ),
  );
  return [
    `-- (a) decision cost, ${int(req.estimate)}-token request (estimate at 3.5 chars/token): ${req.turns} turns with tool calls, ${conv.messages.length} messages, ${int(req.body.length)} bytes; window ${int(WINDOW)}; ${runs} runs each`,
    `plan without memo: ${first.action}${first.action === 'compact' ? ` at cut ${first.cut}` : ''}; with a memoized cut at ${memo.cut}: ${reused.action}`,
    row('chat adapter parse + estimate + plan', plain, 5),
    row('chat adapter parse + estimate + plan, memoized cut', withMemo, 5),
    row('JSON.parse of the body (done once per owned request)', jsonParse),
    row('fillDigests + prefixHashes (over budget only)', hashes),
    row('extractPins over the user messages before the cut', pins),
    row('rebuild + JSON.stringify of the compacted request', rebuild),
  ];
}

export async function run(): Promise<void> {
  const lines = [machineLine('compaction bench')];
  const hits = envNumber('BENCH_MEMO_HIT_REQUESTS', 300);
  // BENCH_MEMO_HIT_SIZES=128k runs part (b) at one size only, as often as it is asked (128k,128k,128k: three runs).
  const sizes = (process.env.BENCH_MEMO_HIT_SIZES ?? '40k,128k').split(',').map((x) => x.trim());
  const only = process.env.BENCH_MEMO_HIT_SIZES !== undefined;
  if (!only) lines.push(...decisionBench(envNumber('BENCH_DECISION_RUNS', 300)));
  for (const size of sizes) {
    if (size === '40k')
      lines.push(...(await memoHitBench(hits, { label: '~40k tokens', turns: 28, window: 32_768 })));
    else if (size === '128k')
      lines.push(...(await memoHitBench(hits, { label: '~128k tokens', turns: 88, window: 100_000 })));
    else throw new Error(`BENCH_MEMO_HIT_SIZES: ${size} is not one of 40k, 128k`);
  }
  if (only) {
    const path = writeResults('compaction-memo-hit.txt', lines);
    process.stdout.write(`${lines.join('\n')}\n(written to ${path})\n`);
    return;
  }
  lines.push(...(await replayBench()));
  const path = writeResults('compaction.txt', lines);
  process.stdout.write(`${lines.join('\n')}\n(written to ${path})\n`);
}

if (require.main === module) {
  run().catch((err: unknown) => {
    process.stderr.write(
      `compaction bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  });
}
