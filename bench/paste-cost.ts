// `npm run bench -- paste-cost [-- --turns N --window N|tight]`: summariser calls per compacted turn on the real clients'
// long-paste session (issue 32 item 8), and how many turns waited on a summary in the foreground (issue 30 item 12):
// the cut rule before issue 32 (GUARDIAN_CUT_HEADROOM_TURNS=0) and the current one (the default, 2), each with
// pre-compaction off, then the current one at the defaults (pre-compaction on, GUARDIAN_PRECOMPACT_THRESHOLD=0.8),
// with a pause between turns in which the background job finishes, as it does while a person reads the answer: so
// the count does not depend on timing. Also what each carries: the pinned fact in every compacted request, every
// request inside the window. The sessions are the recorded clients' shapes (test/works-with/recordings, read from
// the working directory: npm runs benches at the package root) sent as the clients send them, each turn pasting
// ~17 KB, against the stub at the same hard window. `--window tight` gives each client the window its own part and 60%
// of one paste fill (in whole KiB), where the newest paste is cut on every turn (test/compaction/newest-cut-tight-window).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { countPrompt, startStub } from '@guardian/stub-backend';
import { createLogger } from '@guardian/telemetry';

import { startGuardian } from '../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../apps/guardian/src/config/guardian-config';
import {
  assistantItem,
  itemsOf,
  loadRecordings,
  openingBody,
  requestText,
  userItem,
  type Json,
  type Recording,
} from '../test/support/recordings';
import { filler, machineLine, writeResults } from './support';

const FACT = 'ZEBRA-7431';
const PASTE_CHARS = 17_000;
const FENCE = '## Context Guardian: archived conversation';
const RULES = [
  { name: 'before (0), pre-compaction off', headroom: '0', precompact: '0' },
  { name: 'now (2), pre-compaction off', headroom: '2', precompact: '0' },
  { name: 'now (2), defaults', headroom: '2', precompact: '0.8' },
] as const;

function option(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(name);
  const v = i === -1 ? undefined : Number(args[i + 1]);
  return v !== undefined && Number.isFinite(v) ? v : fallback;
}

/** The same paste shape as the long works-with sessions: ~17 KB of numbered log lines, different every turn. */
function paste(turn: number): string {
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < PASTE_CHARS; i++)
    lines.push(`${String(turn).padStart(2, '0')}:${String(i).padStart(4, '0')} ${filler(60, turn * 31 + i)}`);
  return lines.join('\n').slice(0, PASTE_CHARS);
}

function userText(turn: number): string {
  const head =
    turn === 1
      ? `Remember this: the deploy key is ${FACT}. Review the log below.`
      : `Step ${turn}: review the next log below and say what changed.`;
  return `${head}\n${paste(turn)}`;
}

/** The client's own part and 60% of one paste, in whole KiB of tokens: its newest paste never fits whole. */
function tightWindow(rec: Recording): number {
  const opening = openingBody(rec, userText(1));
  const own = countPrompt(openingBody(rec, '').body, opening.route);
  const pasted = countPrompt(opening.body, opening.route) - own;
  return Math.ceil((own + 0.6 * pasted) / 1024) * 1024;
}

interface Row {
  client: string;
  rule: string;
  turns: number;
  answered: number;
  compacted: number;
  calls: number;
  /** Turns that waited on a summariser call in the foreground (`summary_waits`). */
  waited: number;
  carried: number;
  overWindow: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until no background pre-compaction runs: the pause in which a person reads the answer. */
async function idle(url: string): Promise<void> {
  for (;;) {
    const stats = (await (await fetch(`${url}/guardian/stats`)).json()) as {
      precompact: { running: number };
    };
    if (stats.precompact.running === 0) return;
    await sleep(10);
  }
}

async function runSession(
  rec: Recording,
  opts: { turns: number; window: number; headroom: string; precompact: string },
) {
  const stub = await startStub({ window: opts.window, maxRecorded: 10_000 });
  const dataDir = mkdtempSync(join(tmpdir(), 'cg-bench-paste-'));
  const config = GuardianConfig.fromEnv(
    {
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_LOG_LEVEL: 'warn',
      GUARDIAN_NUM_CTX: String(opts.window),
      GUARDIAN_PRECOMPACT_THRESHOLD: opts.precompact,
      GUARDIAN_CUT_HEADROOM_TURNS: opts.headroom,
    },
    { version: 'bench', home: dataDir },
  );
  const guardian = await startGuardian(config, createLogger({ level: 'warn' }), { port: 0 });
  const opening = openingBody(rec, userText(1));
  const key = Array.isArray(opening.body.messages) ? 'messages' : 'input';
  let history = itemsOf(opening.body);
  let answered = 0;
  try {
    for (let turn = 1; turn <= opts.turns; turn++) {
      if (turn > 1) history = [...history, userItem(opening.route, userText(turn))];
      const res = await fetch(`${guardian.url}${opening.path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-bench',
          'x-api-key': 'sk-bench',
          'anthropic-version': '2023-06-01',
        },
        body: JSON.stringify({ ...opening.body, [key]: history }),
      });
      await res.arrayBuffer();
      if (res.status === 200) answered += 1;
      await idle(guardian.url);
      history = [
        ...history,
        assistantItem(opening.route, `Reviewed step ${turn}; nothing blocks the deploy.`),
      ];
    }
    const sent = stub.requests.filter((r) => r.route === opening.route && !r.isSummary);
    const compacted = sent.filter((r) => r.body.toString('utf8').includes(FENCE));
    const stats = (await (await fetch(`${guardian.url}/guardian/stats`)).json()) as { summary_waits: number };
    return {
      waited: stats.summary_waits,
      answered,
      compacted: compacted.length,
      calls: stub.requests.filter((r) => r.isSummary).length,
      carried: compacted.filter((r) => requestText(r.json as Json).includes(FACT)).length,
      overWindow: sent.filter((r) => (r.promptTokens ?? 0) > opts.window).length,
    };
  } finally {
    await guardian.close(200);
    await stub.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function run(args: readonly string[] = []): Promise<void> {
  const turns = option(args, '--turns', 14);
  const tight = args[args.indexOf('--window') + 1] === 'tight';
  const window = tight ? 0 : option(args, '--window', 32768);
  const recordings = loadRecordings(resolve('test', 'works-with', 'recordings'));
  const rows: Row[] = [];
  for (const rec of recordings) {
    for (const rule of RULES) {
      const at = tight ? tightWindow(rec) : window;
      const r = await runSession(rec, { turns, window: at, ...rule });
      rows.push({
        client: `${rec.client} ${rec.version}${tight ? ` at ${at}` : ''}`,
        rule: rule.name,
        turns,
        ...r,
      });
    }
  }
  const lines = [
    machineLine('paste-cost'),
    `# ${turns} turns of ~17 KB pastes per client at ${tight ? "the window the client's own part and 60% of a paste fill" : `a ${window}-token window`} (stub and GUARDIAN_NUM_CTX), fact on turn 1;`,
    '# rule = GUARDIAN_CUT_HEADROOM_TURNS and pre-compaction; calls/compacted = summariser calls / compacted turns;',
    '# waited = turns that waited on a summariser call in the foreground',
    '| client | rule | answered | compacted turns | summariser calls | calls/compacted | waited | fact carried | over window |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.client} | ${r.rule} | ${r.answered}/${r.turns} | ${r.compacted} | ${r.calls} | ` +
        `${r.compacted > 0 ? (r.calls / r.compacted).toFixed(2) : '-'} | ${r.waited} | ${r.carried}/${r.compacted} | ` +
        `${r.overWindow} |`,
    ),
  ];
  for (const rule of RULES) {
    const mine = rows.filter((r) => r.rule === rule.name);
    const calls = mine.reduce((n, r) => n + r.calls, 0);
    const compacted = mine.reduce((n, r) => n + r.compacted, 0);
    const waited = mine.reduce((n, r) => n + r.waited, 0);
    lines.push(
      `all clients, ${rule.name}: ${calls} summariser calls over ${compacted} compacted turns = ` +
        `${compacted > 0 ? (calls / compacted).toFixed(2) : '-'} per compacted turn; ${waited} turns waited`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  writeResults(tight ? 'paste-cost-tight.txt' : 'paste-cost.txt', lines);
}
