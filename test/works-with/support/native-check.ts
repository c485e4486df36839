import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { ARCHIVE_FENCE } from '@guardian/compaction';
import type { RecordedRequest } from '@guardian/stub-backend';

import { CLIENTS, type ClientSpec } from '../clients';
import { FACT_SENTENCE, FACT_TOKEN } from './pastes';
import type { Turn } from './session';
import type { TapRecord } from './tap';

/**
 * Native mode (issue 27, first Done-when line): real Codex with its built-in `openai` provider, `openai_base_url`
 * pointed at the sidecar in front of the strict stub, in a session that crosses Codex's own auto-compaction turn
 * after turn. Codex decides by the provider's name that it may ask the server to compact, and has no fallback.
 */

/** The stub's (and so the sidecar's detected) window: Codex's own prompt and tools are about 10,000 tokens. */
export const NATIVE_WINDOW = 32_768;
/** Codex's `model_auto_compact_token_limit`: under its own prompt, so every turn after the first compacts first. */
export const NATIVE_COMPACT_LIMIT = 6_000;
/** The Done-when line: "crosses its own auto-compaction at least 3 times". */
const MIN_COMPACTIONS = 3;

/** What Codex prints (stderr in `exec`) each time it compacted the conversation. */
const CODEX_COMPACTED = /^context compacted$/gm;
const SUMMARY_MARK = `<<<${ARCHIVE_FENCE}`;
const COMPACTION_ITEMS = new Set([
  'compaction',
  'compaction_trigger',
  'compaction_summary',
  'context_compaction',
]);
const COMPACTION_FIELDS = ['context_management', 'compaction'];

/** Codex 0.171 with its built-in provider: only `openai_base_url` moves it, as a user would configure it. */
export function codexBuiltIn(limit: number): ClientSpec {
  const codex = CLIENTS.find((c) => c.name === 'codex');
  if (!codex) throw new Error('no codex entry in test/works-with/clients.ts');
  return {
    ...codex,
    setup: (r) => {
      const env = codex.setup(r);
      writeCodexConfig(env.CODEX_HOME!, r.origin, r.model, limit);
      return { CODEX_HOME: env.CODEX_HOME!, OPENAI_API_KEY: 'dummy-key' };
    },
  };
}

export function writeCodexConfig(codexHome: string, origin: string, model: string, limit: number): void {
  // clients.ts's setup made the folder; this replaces its custom-provider config with the built-in provider's.
  writeFileSync(
    join(codexHome, 'config.toml'),
    [
      `model = "${model}"`,
      `openai_base_url = "${origin}/v1"`,
      `model_auto_compact_token_limit = ${limit}`,
      'check_for_update_on_startup = false',
      '[analytics]',
      'enabled = false',
      '[feedback]',
      'enabled = false',
      '',
    ].join('\n'),
  );
}

/** Where a request mentions the compaction protocols: item types anywhere, fields at the top, our handle's prefix. */
export function compactionVocabulary(json: unknown, raw: string): string[] {
  const found = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (typeof o.type === 'string' && COMPACTION_ITEMS.has(o.type)) found.add(`item ${o.type}`);
      Object.values(o).forEach(walk);
    }
  };
  walk(json);
  if (json && typeof json === 'object' && !Array.isArray(json))
    for (const f of COMPACTION_FIELDS) if (f in json) found.add(`field ${f}`);
  if (raw.includes('"encrypted_content":"cg1.')) found.add('a cg1 handle');
  return [...found];
}

const parse = (body: Buffer): unknown => {
  try {
    return body.length ? (JSON.parse(body.toString('utf8')) as unknown) : undefined;
  } catch {
    // Not JSON (a GET): nothing in it can name a compaction.
    return undefined;
  }
};

/** How Codex asked for a compaction, if this client request is one. */
function compactionAsk(rec: TapRecord): 'trigger' | 'compact' | undefined {
  const path = rec.url.split('?')[0];
  if (rec.method === 'POST' && path === '/v1/responses/compact') return 'compact';
  if (rec.method !== 'POST' || path !== '/v1/responses') return undefined;
  const input = (parse(rec.body) as { input?: unknown } | undefined)?.input;
  const last: unknown = Array.isArray(input) ? input.at(-1) : undefined;
  return last && typeof last === 'object' && (last as { type?: unknown }).type === 'compaction_trigger'
    ? 'trigger'
    : undefined;
}

const strings = (v: unknown): string[] =>
  typeof v === 'string'
    ? [v]
    : Array.isArray(v)
      ? v.flatMap(strings)
      : v && typeof v === 'object'
        ? Object.entries(v as Record<string, unknown>).flatMap(([k, x]) => (k === 'tools' ? [] : strings(x)))
        : [];

/** Guardian's probe in `auto` mode: the one request of its own to the compact endpoint (native-mode.ts). */
const isProbe = (r: RecordedRequest): boolean =>
  r.method === 'POST' && r.path.split('?')[0] === '/v1/responses/compact';

export interface NativeAnalysis {
  turns: number;
  answered: number;
  /** "context compacted" lines Codex printed, per turn. */
  codexCompacted: number[];
  asks: { trigger: number; compact: number; answered: number };
  websocket: { tried: number; refused426: number };
  /** Generation requests the stub received (summariser calls apart), and those after the first compaction. */
  generations: number;
  afterCompaction: number;
  factVerbatim: number;
  factInSummary: number;
  factMissing: number;
  summariserCalls: number;
  /** Guardian's own probes of the upstream (`auto`: does it serve /v1/responses/compact itself?), and their answers. */
  probes: number[];
  stubRefused: number;
  /** Compaction vocabulary the stub received, with the request's index: must stay empty. */
  leaks: string[];
}

export function analyseNative(turns: Turn[], tap: TapRecord[], stub: RecordedRequest[]): NativeAnalysis {
  const asks = { trigger: 0, compact: 0, answered: 0 };
  const websocket = { tried: 0, refused426: 0 };
  for (const rec of tap) {
    const ask = compactionAsk(rec);
    if (ask) {
      asks[ask]++;
      if (rec.status === 200) asks.answered++;
    }
    if (/websocket/i.test(String(rec.headers.upgrade ?? ''))) {
      websocket.tried++;
      if (rec.status === 426) websocket.refused426++;
    }
  }
  const firstAsk = tap.findIndex((r) => compactionAsk(r) !== undefined);
  const turnOfFirstAsk = turns.find((t) => firstAsk >= t.tapFrom && firstAsk < t.tapTo);
  const leaks: string[] = [];
  let generations = 0;
  let afterCompaction = 0;
  let factVerbatim = 0;
  let factInSummary = 0;
  let factMissing = 0;
  stub.forEach((r, i) => {
    const json = r.json ?? parse(r.body);
    for (const v of compactionVocabulary(json, r.body.toString('utf8'))) leaks.push(`#${i} ${r.path}: ${v}`);
    if (r.isSummary || r.route !== 'responses') return;
    generations++;
    if (!turnOfFirstAsk || i < turnOfFirstAsk.stubFrom) return;
    afterCompaction++;
    const texts = strings(json);
    const inSummary = texts.some((s) => s.includes(SUMMARY_MARK) && s.includes(FACT_TOKEN));
    const verbatim = texts.some((s) => s.includes(FACT_SENTENCE));
    if (inSummary) factInSummary++;
    else if (verbatim) factVerbatim++;
    else factMissing++;
  });
  return {
    turns: turns.length,
    answered: turns.filter((t) => t.answered).length,
    codexCompacted: turns.map((t) => (`${t.stdout}\n${t.stderr}`.match(CODEX_COMPACTED) ?? []).length),
    asks,
    websocket,
    generations,
    afterCompaction,
    factVerbatim,
    factInSummary,
    factMissing,
    summariserCalls: stub.filter((r) => r.isSummary).length,
    probes: stub.filter(isProbe).map((r) => r.status),
    stubRefused: stub.filter((r) => r.status >= 400 && !isProbe(r)).length,
    leaks,
  };
}

/** The failures of a native run, each a sentence; empty when it passed. */
export function nativeFailures(a: NativeAnalysis, wantTurns: number): string[] {
  const failures: string[] = [];
  const compacted = a.codexCompacted.reduce((x, y) => x + y, 0);
  if (a.turns < wantTurns) failures.push(`ran ${a.turns} of ${wantTurns} turns`);
  if (a.answered < a.turns) failures.push(`${a.turns - a.answered} turns not answered`);
  if (compacted < MIN_COMPACTIONS)
    failures.push(`Codex reported ${compacted} compactions, under ${MIN_COMPACTIONS}`);
  const asked = a.asks.trigger + a.asks.compact;
  if (asked !== compacted)
    failures.push(`Codex asked the server to compact ${asked} times but reported ${compacted}`);
  if (a.asks.answered !== asked)
    failures.push(`${asked - a.asks.answered} compaction requests not answered 200`);
  if (a.leaks.length > 0)
    failures.push(`the stub received compaction vocabulary: ${a.leaks.slice(0, 3).join('; ')}`);
  if (a.stubRefused > 0) failures.push(`the stub refused ${a.stubRefused} requests`);
  // auto mode must have asked once and been told no (the stub serves no compaction endpoint), else it would forward.
  if (a.probes.length !== 1 || a.probes[0] !== 404)
    failures.push(
      `guardian probed the stub ${a.probes.length} times (answers ${a.probes.join(',') || '-'}), not once`,
    );
  if (a.afterCompaction === 0) failures.push('no generation request reached the stub after a compaction');
  if (a.factMissing > 0)
    failures.push(
      `the pinned fact missing in ${a.factMissing} of ${a.afterCompaction} requests after a compaction`,
    );
  if (a.websocket.tried !== a.websocket.refused426)
    failures.push(`${a.websocket.tried - a.websocket.refused426} WebSocket upgrades not answered 426`);
  return failures;
}

export function nativeDetail(a: NativeAnalysis): string {
  return (
    `turns ${a.turns} (answered ${a.answered}); Codex "context compacted" per turn [${a.codexCompacted.join(',')}]; ` +
    `compaction requests: trigger ${a.asks.trigger}, /responses/compact ${a.asks.compact}, answered 200 ${a.asks.answered}; ` +
    `WebSocket upgrades ${a.websocket.tried} (426: ${a.websocket.refused426}); stub generation requests ${a.generations}, ` +
    `after the first compaction ${a.afterCompaction}: fact in guardian's summary block ${a.factInSummary}, ` +
    `verbatim only ${a.factVerbatim}, missing ${a.factMissing}; summariser calls ${a.summariserCalls}; ` +
    `guardian's probes of the stub ${a.probes.length} (answered ${a.probes.join(',') || '-'}); ` +
    `stub refusals ${a.stubRefused}; compaction vocabulary at the stub ${a.leaks.length}`
  );
}

export const nativePrompt = (n: number): string =>
  n === 1
    ? `${FACT_SENTENCE} Reply with one short line; do not run any tool or read any file.`
    : `Turn ${n}: reply with one short line again; do not run any tool or read any file.`;
