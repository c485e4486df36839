// `npm run bench -- tool-clearing [-- --turns N --window N]`: a tool-heavy agent session on each of the three routes,
// with old tool results cleared to pointers before a summary (issue 32 item 3, GUARDIAN_CLEAR_TOOL_RESULTS=1, the
// default) beside the same session without it (=0), in the same run. Each turn the agent reads a file (~6 KB) and
// runs the tests (~1 KB, naming an artifact id); the figures are what the backend was sent: summariser calls and their
// input, compacted and cleared turns, the prompt tokens of every forwarded request (the stub's own count), and how
// many of the session's artifact ids the last request still holds. Against the stub at the same hard window;
// pre-compaction is off, so no count depends on timing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub } from '@guardian/stub-backend';
import { createLogger } from '@guardian/telemetry';

import { startGuardian } from '../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../apps/guardian/src/config/guardian-config';
import { filler, machineLine, writeResults } from './support';

type Json = Record<string, unknown>;
type Route = 'chat' | 'responses' | 'messages';

const FENCE = '## Context Guardian: archived conversation';
const POINTER = '[context-guardian: old result';
const SETTINGS = [
  { name: 'off (0)', clear: '0' },
  { name: 'on (1)', clear: '1' },
] as const;

function option(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(name);
  const v = i === -1 ? undefined : Number(args[i + 1]);
  return v !== undefined && Number.isFinite(v) ? v : fallback;
}

const artifact = (turn: number): string => `ART-${String(4000 + turn * 37)}`;
const fileText = (turn: number): string =>
  Array.from(
    { length: 80 },
    (_, i) => `${String(i + 1).padStart(3)}  export const step${turn}_${i} = '${filler(50, turn * 97 + i)}';`,
  ).join('\n');
const testText = (turn: number): string =>
  `${Array.from({ length: 14 }, (_, i) => `  ok ${i + 1} - module ${turn} case ${i + 1} ${filler(30, turn + i)}`).join('\n')}\nrun_tests for module ${turn} finished: artifact id ${artifact(turn)}.`;

/** One turn's items in a route's shapes: the user's ask, two tool calls with their results, the answer. */
function turnItems(route: Route, turn: number): Json[] {
  const ask = `Step ${turn}: read src/module_${turn}.ts and run its tests.`;
  const answer = `Module ${turn} reads fine and its tests pass.`;
  const calls = [
    { id: `r${turn}`, name: 'read_file', args: { path: `src/module_${turn}.ts` }, out: fileText(turn) },
    { id: `t${turn}`, name: 'run_tests', args: { target: `module_${turn}` }, out: testText(turn) },
  ];
  if (route === 'chat')
    return [
      { role: 'user', content: ask },
      ...calls.flatMap((c) => [
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } },
          ],
        },
        { role: 'tool', tool_call_id: c.id, content: c.out },
      ]),
      { role: 'assistant', content: answer },
    ];
  if (route === 'responses')
    return [
      { role: 'user', content: ask },
      ...calls.flatMap((c) => [
        { type: 'function_call', call_id: c.id, name: c.name, arguments: JSON.stringify(c.args) },
        { type: 'function_call_output', call_id: c.id, output: c.out },
      ]),
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: answer }] },
    ];
  return [
    { role: 'user', content: ask },
    ...calls.flatMap((c) => [
      { role: 'assistant', content: [{ type: 'tool_use', id: c.id, name: c.name, input: c.args }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: c.id, content: c.out }] },
    ]),
    { role: 'assistant', content: answer },
  ];
}

const PATHS: Record<Route, string> = {
  chat: '/v1/chat/completions',
  responses: '/v1/responses',
  messages: '/v1/messages',
};

function body(route: Route, history: Json[], next: string): Json {
  const ask = { role: 'user', content: next };
  if (route === 'responses') return { model: 'stub-model', max_output_tokens: 64, input: [...history, ask] };
  return { model: 'stub-model', max_tokens: 64, messages: [...history, ask] };
}

/** Bytes two bodies share from their start. */
function sharedPrefix(a: Buffer, b: Buffer): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

interface Row {
  route: Route;
  setting: string;
  answered: number;
  cleared: number;
  compacted: number;
  calls: number;
  summaryInput: number;
  tokens: number;
  /** Tokens past the prefix each request shares with the one before it, plus every summariser prompt. */
  uncached: number;
  largest: number;
  ids: number;
}

async function runSession(route: Route, opts: { turns: number; window: number; clear: string }) {
  const stub = await startStub({ window: opts.window, maxRecorded: 10_000 });
  const dataDir = mkdtempSync(join(tmpdir(), 'cg-bench-tools-'));
  const config = GuardianConfig.fromEnv(
    {
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_LOG_LEVEL: 'warn',
      GUARDIAN_NUM_CTX: String(opts.window),
      GUARDIAN_PRECOMPACT_THRESHOLD: '0',
      GUARDIAN_CLEAR_TOOL_RESULTS: opts.clear,
    },
    { version: 'bench', home: dataDir },
  );
  const guardian = await startGuardian(config, createLogger({ level: 'warn' }), { port: 0 });
  const history: Json[] = [
    { role: route === 'messages' ? 'user' : 'system', content: 'You are a coding agent.' },
  ];
  if (route === 'messages') history.push({ role: 'assistant', content: 'Ready.' });
  let answered = 0;
  try {
    for (let turn = 1; turn <= opts.turns; turn++) {
      // The request a client sends after its tool calls: the history so far and the next instruction.
      const res = await fetch(`${guardian.url}${PATHS[route]}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-bench',
          'x-api-key': 'sk-bench',
          'anthropic-version': '2023-06-01',
        },
        body: JSON.stringify(body(route, history, `Go on with step ${turn}.`)),
      });
      await res.arrayBuffer();
      if (res.status === 200) answered += 1;
      history.push(...turnItems(route, turn));
    }
    const sent = stub.requests.filter((r) => r.route === route && !r.isSummary);
    const summaries = stub.requests.filter((r) => r.isSummary);
    const text = (r: { body: Buffer }): string => r.body.toString('utf8');
    const last = sent.at(-1);
    // What a backend with a prefix cache (vLLM, llama.cpp) computes anew: each request past the bytes it shares with
    // the previous forwarded one, in proportion; a summariser prompt is new every time.
    let uncached = summaries.reduce((n, r) => n + (r.promptTokens ?? 0), 0);
    sent.forEach((r, i) => {
      const before = i === 0 ? undefined : sent[i - 1]!.body;
      const shared = before ? sharedPrefix(before, r.body) : 0;
      uncached += Math.round((r.promptTokens ?? 0) * (1 - shared / Math.max(1, r.body.length)));
    });
    return {
      answered,
      cleared: sent.filter((r) => text(r).includes(POINTER)).length,
      compacted: sent.filter((r) => text(r).includes(FENCE)).length,
      calls: summaries.length,
      summaryInput: summaries.reduce((n, r) => n + r.body.length, 0),
      tokens: sent.reduce((n, r) => n + (r.promptTokens ?? 0), 0),
      uncached,
      largest: Math.max(0, ...sent.map((r) => r.promptTokens ?? 0)),
      ids: last
        ? Array.from({ length: opts.turns - 1 }, (_, i) => artifact(i + 1)).filter((id) =>
            text(last).includes(id),
          ).length
        : 0,
    };
  } finally {
    await guardian.close(200);
    await stub.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function run(args: readonly string[] = []): Promise<void> {
  const turns = option(args, '--turns', 40);
  const window = option(args, '--window', 32768);
  const rows: Row[] = [];
  for (const route of ['chat', 'responses', 'messages'] as const)
    for (const s of SETTINGS)
      rows.push({ route, setting: s.name, ...(await runSession(route, { turns, window, clear: s.clear })) });
  const lines = [
    machineLine('tool-clearing'),
    `# ${turns} requests per route at a ${window}-token window (stub and GUARDIAN_NUM_CTX); each turn reads a ~6 KB file and`,
    `# runs the tests (~1 KB naming an artifact id); clearing = GUARDIAN_CLEAR_TOOL_RESULTS; tokens = the stub's count of`,
    `# every forwarded request; past the cached prefix = each request's tokens past the bytes it shares with the one before`,
    `# (what a prefix-caching backend computes anew) plus every summariser prompt; ids = the ${turns - 1} artifact ids of`,
    '# earlier turns that the last request holds',
    '| route | clearing | answered | cleared turns | compacted turns | summariser calls | summariser input (chars) | forwarded tokens | past the cached prefix | largest request | ids held |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.route} | ${r.setting} | ${r.answered}/${turns} | ${r.cleared} | ${r.compacted} | ${r.calls} | ${r.summaryInput} | ${r.tokens} | ${r.uncached} | ${r.largest} | ${r.ids}/${turns - 1} |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  writeResults('tool-clearing.txt', lines);
}
