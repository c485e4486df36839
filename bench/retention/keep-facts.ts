// The keep-facts bench (issue 17 §3): `npm run bench -- keep-facts -- --upstream URL --model M --window N --seeds 3`.
// Per seed, a fresh sidecar hears 12 facts over 48 turns (4 pinned with the seed's phrases, 4 stated as standing
// instructions, 4 plain), then one question per fact. Two scores, by kind: *carried*, the fact verbatim in the
// request guardian forwarded with the question (pins, ledger, summary or kept tail); *answered*, the model's reply
// holds it, shown beside the same questions asked with nothing compacted. Without --upstream it runs against the
// project's stub (its summaries list FACT- tokens; its `recall` answers read the request) at 8,192 and 32,768.
import { LEDGER_HEADING, PINS_HEADING, STATED_HEADING } from '@guardian/compaction';
import { z } from 'zod';

import { writeResults } from '../support';
import {
  commonOptions,
  openUpstream,
  parseOptions,
  present,
  sendTurn,
  settingsLine,
  startThrough,
  type Turn,
  type Upstream,
} from './harness';
import {
  baselineHistory,
  history,
  keepFactsSession,
  KINDS,
  questionFor,
  type Fact,
  type FactKind,
} from './keep-facts-session';

export const keepFactsOptions = commonOptions.extend({
  window: z.coerce.number().int().min(2048).optional(),
  seeds: z.coerce.number().int().min(1).max(20).default(3),
  /** GUARDIAN_LEDGER_MAX_CHARS for the run (the sidecar's default when unset); 0 shows what the ledger adds. */
  'ledger-max-chars': z.coerce.number().int().min(0).optional(),
  /** GUARDIAN_STATED_MAX_CHARS for the run (the sidecar's default when unset); 0 shows what the stated values add. */
  'stated-max-chars': z.coerce.number().int().min(0).optional(),
  /**
   * Against the stub (no --upstream): `facts`, its usual summaries, which list every `FACT-` token they read (the
   * figures RETENTION.md has kept since issue 17); `blank`, summaries that hold nothing of the conversation.
   */
  'stub-summaries': z.enum(['facts', 'blank']).default('facts'),
});
export type KeepFactsOptions = z.infer<typeof keepFactsOptions>;

/** Where a carried fact was found in the forwarded request. */
export type Place = 'tail' | 'pins' | 'ledger' | 'stated' | 'summary' | 'none';

export interface FactResult {
  seed: number;
  kind: FactKind;
  value: string;
  carried: boolean;
  where: Place;
  answered: boolean;
  baseline: boolean;
}

export interface WindowResult {
  window: number;
  facts: FactResult[];
  /** Client requests answered 200 (48 turns and 12 questions per seed). */
  answered: number;
  requests: number;
  summariserCalls: number;
  compactions: number;
  reused: number;
}

type Json = Record<string, unknown>;

/**
 * Where `value` sits in a forwarded chat body: the kept tail, or the block's pins, ledger, stated values or summary
 * (the block's lists come in that order, each under its heading).
 */
export function placeOf(body: string | undefined, value: string): Place {
  if (body === undefined) return 'none';
  const messages = ((JSON.parse(body) as Json).messages ?? []) as Json[];
  const text = (m: Json | undefined): string =>
    typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '');
  const has = (t: string): boolean => present(t, [value]).length > 0;
  if (messages.slice(1).some((m) => has(text(m)))) return 'tail';
  const system = text(messages[0]);
  const sections = (
    [
      ['pins', system.indexOf(PINS_HEADING)],
      ['ledger', system.indexOf(LEDGER_HEADING)],
      ['stated', system.indexOf(STATED_HEADING)],
    ] as const
  ).filter(([, at]) => at !== -1);
  for (const [i, [place, at]] of sections.entries())
    if (has(system.slice(at, sections[i + 1]?.[1]))) return place;
  return has(system) ? 'summary' : 'none';
}

async function runSeed(
  upstream: Upstream,
  opts: KeepFactsOptions & { window: number },
  seed: number,
): Promise<{ facts: FactResult[]; answered: number; requests: number; stats: Record<string, unknown> }> {
  const env: Record<string, string> = {};
  if (opts['ledger-max-chars'] !== undefined)
    env.GUARDIAN_LEDGER_MAX_CHARS = String(opts['ledger-max-chars']);
  if (opts['stated-max-chars'] !== undefined)
    env.GUARDIAN_STATED_MAX_CHARS = String(opts['stated-max-chars']);
  const through = await startThrough(upstream, opts, env);
  const session = keepFactsSession(seed);
  const base = { base: `${through.url}/v1`, tap: through.tap };
  let answered = 0;
  try {
    const past = history(session);
    // The turns, as the client sends them: each request is the history so far. The model's replies are not kept
    // (the scripted ones are), so every backend is asked about the same history.
    for (let t = 1; t <= session.user.length; t++) {
      const turn = await sendTurn(base, opts, past.slice(0, 2 * t), 16);
      if (turn.status === 200) answered += 1;
    }
    // Every question through guardian first, then every one without it: a one-slot server then keeps its prompt
    // cache warm across each run of questions that share a prefix.
    const asked: Turn[] = [];
    for (const f of session.facts) {
      const turn = await sendTurn(base, opts, [...past, questionFor(f)], 48);
      if (turn.status === 200) answered += 1;
      asked.push(turn);
    }
    const facts: FactResult[] = [];
    for (const [i, f] of session.facts.entries()) {
      const direct = await sendTurn(
        { base: upstream.url },
        opts,
        [...baselineHistory(session), questionFor(f)],
        48,
      );
      facts.push(result(seed, f, asked[i]?.forwarded, asked[i]?.answer ?? '', direct.answer));
    }
    return {
      facts,
      answered,
      requests: session.user.length + session.facts.length,
      stats: await through.stats(),
    };
  } finally {
    await through.close();
  }
}

function result(
  seed: number,
  f: Fact,
  forwarded: string | undefined,
  answer: string,
  baseline: string,
): FactResult {
  const where = placeOf(forwarded, f.value);
  return {
    seed,
    kind: f.kind,
    value: f.value,
    carried: where !== 'none',
    where,
    answered: present(answer, [f.value]).length > 0,
    baseline: present(baseline, [f.value]).length > 0,
  };
}

/** Runs every seed at each window (one, or 8,192 and 32,768 when none is named). */
export async function keepFacts(
  opts: KeepFactsOptions,
): Promise<{ backend: string; windows: WindowResult[] }> {
  const windows: WindowResult[] = [];
  let backend = '';
  for (const window of opts.window ? [opts.window] : [8192, 32768]) {
    const o = { ...opts, window };
    const upstream = await openUpstream(o, { blank: opts['stub-summaries'] === 'blank' });
    backend = upstream.label;
    const w: WindowResult = {
      window,
      facts: [],
      answered: 0,
      requests: 0,
      summariserCalls: 0,
      compactions: 0,
      reused: 0,
    };
    try {
      for (let seed = 1; seed <= opts.seeds; seed++) {
        const r = await runSeed(upstream, o, seed);
        w.facts.push(...r.facts);
        w.answered += r.answered;
        w.requests += r.requests;
        w.summariserCalls += Number(r.stats.summariser_calls ?? 0);
        w.compactions += Number(r.stats.compactions_performed ?? 0);
        w.reused += Number(r.stats.summaries_reused ?? 0);
      }
    } finally {
      await upstream.close();
    }
    windows.push(w);
  }
  return { backend, windows };
}

const score = (facts: readonly FactResult[], key: 'carried' | 'answered' | 'baseline'): string =>
  `${facts.filter((f) => f[key]).length}/${facts.length}`;

export function keepFactsReport(
  r: { backend: string; windows: WindowResult[] },
  opts: KeepFactsOptions,
): string[] {
  const lines = [
    `keep-facts bench ${new Date().toISOString()}; upstream ${r.backend}, model ${opts.model}; seeds 1-${opts.seeds}; 12 facts (4 pinned, 4 instruction, 4 plain) over 48 turns, then one question each; ${settingsLine(opts, { GUARDIAN_LEDGER_MAX_CHARS: opts['ledger-max-chars'], GUARDIAN_STATED_MAX_CHARS: opts['stated-max-chars'] })}`,
    `${'window'.padEnd(8)}${'kind'.padEnd(13)}${'carried'.padEnd(10)}${'answered'.padEnd(10)}answered with nothing compacted (baseline)`,
  ];
  for (const w of r.windows) {
    for (const kind of [...KINDS, 'all'] as const) {
      const facts = kind === 'all' ? w.facts : w.facts.filter((f) => f.kind === kind);
      lines.push(
        `${String(w.window).padEnd(8)}${kind.padEnd(13)}${score(facts, 'carried').padEnd(10)}${score(facts, 'answered').padEnd(10)}${score(facts, 'baseline')}`,
      );
    }
    const where = (['tail', 'pins', 'ledger', 'stated', 'summary', 'none'] as const)
      .map((p) => `${p} ${w.facts.filter((f) => f.where === p).length}`)
      .join(', ');
    lines.push(
      `${String(w.window).padEnd(8)}requests answered ${w.answered}/${w.requests}; compactions ${w.compactions} (${w.reused} reused), summariser calls ${w.summariserCalls}; found in: ${where}`,
    );
  }
  return lines;
}

/** `npm run bench -- keep-facts [-- options]`: prints the figures and writes bench/results/keep-facts.txt. */
export async function run(args: readonly string[] = []): Promise<void> {
  const opts = parseOptions(keepFactsOptions, args, ['json']);
  const result = await keepFacts(opts);
  const lines = keepFactsReport(result, opts);
  process.stdout.write(opts.json ? `${JSON.stringify(result, null, 2)}\n` : `${lines.join('\n')}\n`);
  writeResults(
    `keep-facts${opts['stub-summaries'] === 'blank' && !opts.upstream ? '-blank-summaries' : ''}.txt`,
    lines,
  );
}
