// `npm run bench -- state-probes [-- --upstream URL --model M --window N --seeds S]` (issue 32 item 6): seeded
// software-project sessions whose state items (state-session.ts) are probed only after compaction, after one and
// after three chained compactions, through guardian as configured, through a plain-summary guardian (summary memo,
// pins and ledger off: every compaction summarises the whole evicted prefix afresh and nothing else is carried), and
// straight to the upstream with the full history. Scored by exact strings, no judge:
//   carried  - the value is in the forwarded request as current (for a corrected item: the replaced value absent,
//              only on lines that mark it superseded or retired, or only before the value's last mention);
//   answered - the model's reply holds the value.
import { startStub } from '@guardian/stub-backend';
import { request } from 'undici';
import { z } from 'zod';

import { writeResults } from '../support';
import {
  commonOptions,
  openUpstream,
  parseOptions,
  settingsLine,
  startThrough,
  type CommonOptions,
  type Through,
  type Upstream,
} from './harness';
import { KINDS, stateSession, type StateItem, type StateMessage } from './state-session';
import { SLOW_BACKEND_MS, type TapCall } from './tap';

const options = commonOptions.extend({
  window: z.coerce.number().int().min(2048).default(8192),
  seeds: z.coerce.number().int().min(1).default(3),
  /** The most work turns sent while waiting for the third compaction. */
  'max-turns': z.coerce.number().int().min(1).default(400),
  /**
   * Against the stub (no --upstream): `blank`, summaries that hold nothing of the conversation, so the figures measure
   * what guardian carries by its own rules; `facts`, the stub's usual summaries, which list every `FACT-` token they
   * read (every value of this bench), so even a plain summary carries them all.
   */
  'stub-summaries': z.enum(['blank', 'facts']).default('blank'),
});
export type StateProbesOptions = z.infer<typeof options>;
type Options = StateProbesOptions;

const FENCE = '## Context Guardian: archived conversation';
/** The plain-summary arm: every compaction summarises the whole evicted prefix afresh, and nothing else is carried. */
const PLAIN_SUMMARY: Readonly<Record<string, string>> = {
  GUARDIAN_SUMMARY_MEMO: '0',
  GUARDIAN_PIN_MAX_CHARS: '0',
  GUARDIAN_LEDGER_MAX_CHARS: '0',
  GUARDIAN_STATED_MAX_CHARS: '0',
  GUARDIAN_ANCHOR_MAX_CHARS: '0',
  GUARDIAN_RECALL_MAX_CHARS: '0',
};
const SUPERSEDED = /supersed|retired|no longer current|replaced by/i;
const PHASES = [1, 3] as const;
const ARMS = ['guardian', 'plain summary', 'full context'] as const;
type Arm = (typeof ARMS)[number];

interface Score {
  carried: boolean;
  answered: boolean;
}
/** Scores by arm, phase (compactions before the probes) and item, in item order. */
export type Scores = Record<Arm, Record<number, Score[]>>;
/** What each sidecar arm sent upstream over all seeds: summariser calls, and the other requests it forwarded. */
type Costs = Record<Exclude<Arm, 'full context'>, { summaries: number; forwarded: number }>;

/**
 * True when `value` is in `text` as current (case aside). For a corrected item, the replaced value may stay only on
 * lines that mark it superseded or retired, or before the value's last mention: the newest statement wins, as it
 * does for a reader of the transcript (and for the stub's recall reader).
 */
export function carriedAsCurrent(text: string, item: StateItem): boolean {
  const lower = text.toLowerCase();
  const last = lower.lastIndexOf(item.value.toLowerCase());
  if (last === -1) return false;
  if (item.stale === undefined) return true;
  const stale = item.stale.toLowerCase();
  let at = 0;
  for (const line of lower.split('\n')) {
    if (line.includes(stale) && !SUPERSEDED.test(line) && at + line.lastIndexOf(stale) > last) return false;
    at += line.length + 1;
  }
  return true;
}

async function chat(
  base: string,
  opts: CommonOptions,
  messages: readonly StateMessage[],
  maxTokens: number,
): Promise<{ status: number; answer: string }> {
  const res = await request(`${base}/chat/completions`, {
    method: 'POST',
    headersTimeout: SLOW_BACKEND_MS,
    bodyTimeout: SLOW_BACKEND_MS,
    headers: {
      'content-type': 'application/json',
      'x-guardian-session': 'state-probes',
      ...(opts['api-key'] ? { authorization: `Bearer ${opts['api-key']}` } : {}),
    },
    body: JSON.stringify({
      model: opts.model,
      messages,
      max_tokens: maxTokens,
      temperature: 0,
      stream: false,
    }),
  });
  const text = await res.body.text();
  let answer = '';
  try {
    const content = (JSON.parse(text) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]
      ?.message?.content;
    answer = typeof content === 'string' ? content : '';
  } catch (err) {
    // An error page is not an answer: it scores as unanswered.
    answer = `(unparsed answer: ${String(err)})`;
  }
  return { status: res.statusCode, answer };
}

const question = (item: StateItem): StateMessage => ({
  role: 'user',
  content: `Quick check from earlier in this session, reply with the exact value only. ${item.question}`,
});

/** Each probe on top of the history, on its own; carried read from what the tap saw forwarded. */
async function probe(
  target: { base: string; through?: Through },
  opts: CommonOptions,
  history: readonly StateMessage[],
  items: readonly StateItem[],
): Promise<Score[]> {
  const out: Score[] = [];
  for (const item of items) {
    const before = target.through?.tap.calls.length ?? 0;
    const messages = [...history, question(item)];
    const r = await chat(target.base, opts, messages, 48);
    const sent = target.through
      ? (target.through.tap.calls
          .slice(before)
          .filter((c) => !c.summary)
          .at(-1)?.body ?? '')
      : r.status === 200
        ? JSON.stringify(messages)
        : '';
    out.push({
      carried: carriedAsCurrent(sent.replace(/\\n/g, '\n'), item),
      answered: r.answer.toLowerCase().includes(item.value.toLowerCase()),
    });
  }
  return out;
}

/**
 * The number of distinct guardian blocks the session's own turns were forwarded with: each new one is a compaction
 * chained on the last. A probe's request is not counted: a probe asked on top of the history can be compacted anew,
 * and phase 3 must be three compactions of the session, not of its questions.
 */
function compactions(turns: readonly TapCall[]): number {
  const blocks = new Set<string>();
  for (const c of turns) {
    if (c.summary) continue;
    const at = c.body.indexOf(FENCE);
    if (at !== -1) blocks.add(c.body.slice(at, c.body.indexOf('CONTEXT-GUARDIAN-ARCHIVE>>>', at)));
  }
  return blocks.size;
}

/** One seed through one sidecar: work turns until each phase's compactions, then the probes (and the baseline's). */
async function runSeed(
  seed: number,
  upstream: Upstream,
  full: Upstream,
  opts: Options,
  arm: Exclude<Arm, 'full context'>,
  scores: Scores,
  costs: Costs,
): Promise<void> {
  const env: Record<string, string> = arm === 'guardian' ? {} : PLAIN_SUMMARY;
  const through = await startThrough(upstream, opts, env);
  const session = stateSession(seed);
  const history: StateMessage[] = [
    { role: 'system', content: 'You are a coding agent on a software project.' },
  ];
  const turns: TapCall[] = [];
  const send = async (turn: StateMessage[]): Promise<void> => {
    // The turn's user message is sent with everything before it; its tool messages and answer join the history.
    history.push(turn[0]!);
    const before = through.tap.calls.length;
    await chat(`${through.url}/v1`, opts, history, 16);
    turns.push(...through.tap.calls.slice(before));
    history.push(...turn.slice(1));
  };
  try {
    for (const turn of session.opening) await send(turn);
    let k = 0;
    for (const phase of PHASES) {
      while (compactions(turns) < phase && k < opts['max-turns']) await send(session.work(++k));
      if (compactions(turns) < phase) continue;
      (scores[arm][phase] ??= []).push(
        ...(await probe({ base: `${through.url}/v1`, through }, opts, history, session.items)),
      );
      if (arm === 'guardian')
        (scores['full context'][phase] ??= []).push(
          ...(await probe({ base: full.url }, opts, history, session.items)),
        );
    }
  } finally {
    costs[arm].summaries += through.tap.calls.filter((c) => c.summary).length;
    costs[arm].forwarded += through.tap.calls.filter((c) => !c.summary).length;
    await through.close();
  }
}

function figure(scores: Score[] | undefined, key: keyof Score, kind?: string, items?: StateItem[]): string {
  if (!scores || !items) return 'not reached';
  const picked = scores.filter((_, i) => kind === undefined || items[i % items.length]!.kind === kind);
  return `${picked.filter((s) => s[key]).length}/${picked.length}`;
}

/** Every seed through both sidecars and the baseline; the scores by arm and phase, and what the upstream was. */
export async function stateProbes(
  opts: StateProbesOptions,
): Promise<{ scores: Scores; costs: Costs; label: string }> {
  const upstream = await openUpstream(opts, { blank: opts['stub-summaries'] === 'blank' });
  // The full-context baseline needs a window that holds the whole history: against the stub, a second one that does.
  const wide = opts.upstream
    ? undefined
    : await startStub({ window: 1_000_000, answer: 'recall', maxRecorded: 64 });
  const full: Upstream = wide
    ? { url: wide.baseUrl, label: 'stub, window 1,000,000', close: () => wide.close() }
    : upstream;
  const scores: Scores = { guardian: {}, 'plain summary': {}, 'full context': {} };
  const costs: Costs = {
    guardian: { summaries: 0, forwarded: 0 },
    'plain summary': { summaries: 0, forwarded: 0 },
  };
  try {
    for (let seed = 1; seed <= opts.seeds; seed++)
      for (const arm of ['guardian', 'plain summary'] as const)
        await runSeed(seed, upstream, full, opts, arm, scores, costs);
  } finally {
    await upstream.close();
    await wide?.close();
  }
  return { scores, costs, label: upstream.label };
}

/** The figure of one arm and phase: `carried` or `answered`, for one kind or all, as `N/M`. */
export function stateFigure(
  scores: Scores,
  arm: Arm,
  phase: number,
  key: keyof Score,
  kind?: string,
): string {
  return figure(scores[arm][phase], key, kind, stateSession(1).items);
}

/** `npm run bench -- state-probes [-- options]`: prints the figures and writes bench/results/state-probes.txt. */
export async function run(args: readonly string[] = []): Promise<void> {
  const opts = parseOptions(options, args, ['json']);
  const { scores, costs, label } = await stateProbes(opts);
  const lines = [
    `state-probes bench ${new Date().toISOString()}; upstream ${label}, model ${opts.model}; seeds 1-${opts.seeds}; ` +
      `${stateSession(1).items.length} state items per seed; ${settingsLine(opts)}`,
    'phase: probes after that many chained compactions; carried N/M and answered N/M per arm',
    `${'phase'.padEnd(7)}${'kind'.padEnd(11)}${ARMS.map((a) => `${a} carried`.padEnd(24) + `${a} answered`.padEnd(24)).join('')}`,
  ];
  for (const phase of PHASES)
    for (const kind of [...KINDS, undefined])
      lines.push(
        `${String(phase).padEnd(7)}${(kind ?? 'overall').padEnd(11)}` +
          ARMS.map(
            (a) =>
              stateFigure(scores, a, phase, 'carried', kind).padEnd(24) +
              stateFigure(scores, a, phase, 'answered', kind).padEnd(24),
          ).join(''),
      );
  lines.push(
    `requests sent upstream over all seeds: ${(['guardian', 'plain summary'] as const)
      .map((a) => `${a} ${costs[a].summaries} summariser calls, ${costs[a].forwarded} forwarded`)
      .join('; ')}`,
  );
  process.stdout.write(opts.json ? `${JSON.stringify(scores, null, 2)}\n` : `${lines.join('\n')}\n`);
  // One file per window and summariser, so the runs RETENTION.md quotes sit side by side.
  writeResults(
    `state-probes-${opts.window}${opts.upstream ? '' : `-${opts['stub-summaries']}-summaries`}.txt`,
    lines,
  );
}
