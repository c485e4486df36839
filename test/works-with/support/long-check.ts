import { ARCHIVE_FENCE } from '@guardian/compaction';
import { countPrompt, type GenerationRoute, type RecordedRequest } from '@guardian/stub-backend';

import { FACT_TOKEN, pasteEnd, pasteTag } from './pastes';
import type { Turn } from './session';
import type { TapRecord } from './tap';

/** How a spill pointer starts (libs/compaction `spillPointer`): a spilled paste keeps a head and a tail around it. */
export const SPILL_MARK = '[context-guardian: message ';
const SUMMARY_MARK = `<<<${ARCHIVE_FENCE}`;

const ROUTES: Record<string, GenerationRoute> = {
  '/v1/chat/completions': 'chat',
  '/v1/messages': 'messages',
  '/v1/responses': 'responses',
};
export const generationRoute = (method: string, url: string): GenerationRoute | undefined =>
  method === 'POST' ? ROUTES[url.split('?')[0] ?? ''] : undefined;

const parse = (body: Buffer): unknown => {
  try {
    return body.length ? (JSON.parse(body.toString('utf8')) as unknown) : undefined;
  } catch {
    // Not JSON: no text to look into; the request still counts, with no fact and no paste.
    return undefined;
  }
};

/** Every string of a request body outside `tools` (tool descriptions are the client's, not the conversation). */
export function bodyTexts(value: unknown, key = ''): string[] {
  if (key === 'tools') return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap((v) => bodyTexts(v));
  if (value && typeof value === 'object')
    return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => bodyTexts(v, k));
  return [];
}

/** What one request carried of the planted conversation: the fact, and each paste whole or spilled. */
export interface Carried {
  fact: boolean;
  summaryBlock: boolean;
  /** Turns whose paste is there in full (head tag, end tag, no spill pointer in its text). */
  whole: number[];
  /** Turns whose paste is there cut to head + tail around a spill pointer. */
  spilled: number[];
}

export function carried(texts: readonly string[], turns: number): Carried {
  const whole: number[] = [];
  const spilled: number[] = [];
  for (let t = 1; t <= turns; t++) {
    const withTag = texts.filter((s) => s.includes(pasteTag(t)));
    if (withTag.some((s) => s.includes(SPILL_MARK))) spilled.push(t);
    else if (withTag.some((s) => s.includes(pasteEnd(t)))) whole.push(t);
  }
  return {
    fact: texts.some((s) => s.includes(FACT_TOKEN)),
    summaryBlock: texts.some((s) => s.includes(SUMMARY_MARK)),
    whole,
    spilled,
  };
}

/** One request the sidecar forwarded for a client's generation request (summariser calls are counted apart). */
export interface Forwarded {
  turn: number;
  route: GenerationRoute;
  status: number;
  /** The stub's count of what was forwarded. */
  tokens: number;
  /** The client request it stands for, as an index into the session's client generation requests. */
  client: number;
  /** The sidecar rewrote it: a summary block, a spill pointer, or both. */
  compacted: boolean;
  carried: Carried;
  /** The client's own request carried the fact: only then must the forwarded one. */
  clientHadFact: boolean;
  /** This turn's paste arrived cut to head + tail. */
  newestSpilled: boolean;
  /** ...while one or more older pastes arrived whole (issue 11, finding 2). */
  newestSpilledOlderWhole: boolean;
}

/** One generation request as the client sent it. */
export interface ClientRequest {
  turn: number;
  route: GenerationRoute;
  tap: TapRecord;
  /** The stub's count of the request as sent: what a backend would see without the sidecar. */
  directTokens: number;
  carried: Carried;
}

export interface LongAnalysis {
  clientRequests: ClientRequest[];
  forwarded: Forwarded[];
  /** Per turn, the largest direct count of that turn's client requests (0 when the turn sent none). */
  directPerTurn: number[];
  /** The first turn a backend with this window would have refused sent direct, if any. */
  directFailsAt: number | undefined;
  summariserCalls: number;
  /** Forwarded requests the stub refused (over its hard window, or any error status). */
  refused: number;
}

/**
 * Reads one long session out of the tap's records (what the client sent) and the stub's (what the sidecar forwarded),
 * turn by turn. A forwarded request is matched to the client request it stands for in order within its turn; an
 * overflow retry (a refused forward followed by one more than the client sent) maps to the same client request.
 */
export function analyseLong(opts: {
  turns: readonly Turn[];
  tap: readonly TapRecord[];
  stub: readonly RecordedRequest[];
  totalTurns: number;
  window: number;
}): LongAnalysis {
  const clientRequests: ClientRequest[] = [];
  const forwarded: Forwarded[] = [];
  let summariserCalls = 0;
  const directPerTurn: number[] = [];
  for (const turn of opts.turns) {
    const fromClient = clientRequests.length;
    for (const rec of opts.tap.slice(turn.tapFrom, turn.tapTo)) {
      const route = generationRoute(rec.method, rec.url);
      if (!route) continue;
      const json = parse(rec.body);
      clientRequests.push({
        turn: turn.n,
        route,
        tap: rec,
        directTokens: json === undefined ? 0 : countPrompt(json, route),
        carried: carried(bodyTexts(json), opts.totalTurns),
      });
    }
    const mine = clientRequests.slice(fromClient);
    directPerTurn.push(Math.max(0, ...mine.map((c) => c.directTokens)));
    const sent = opts.stub
      .slice(turn.stubFrom, turn.stubTo)
      .filter((r) => r.route === 'chat' || r.route === 'messages' || r.route === 'responses');
    summariserCalls += sent.filter((r) => r.isSummary).length;
    const answers = sent.filter((r) => !r.isSummary);
    let c = 0;
    answers.forEach((r, j) => {
      const texts = bodyTexts(r.json);
      const got = carried(texts, opts.totalTurns);
      const from = mine[Math.min(c, mine.length - 1)];
      const newestSpilled = got.spilled.includes(turn.n);
      forwarded.push({
        turn: turn.n,
        route: r.route as GenerationRoute,
        status: r.status,
        tokens: r.promptTokens ?? 0,
        client: fromClient + Math.min(c, mine.length - 1),
        compacted: got.summaryBlock || texts.some((s) => s.includes(SPILL_MARK)),
        carried: got,
        clientHadFact: from?.carried.fact ?? false,
        newestSpilled,
        newestSpilledOlderWhole: newestSpilled && got.whole.some((t) => t < turn.n),
      });
      const retried = r.status >= 400 && answers.length - (j + 1) > mine.length - (c + 1);
      if (!retried) c += 1;
    });
  }
  const fails = directPerTurn.findIndex((t) => t > opts.window);
  return {
    clientRequests,
    forwarded,
    directPerTurn,
    directFailsAt: fails >= 0 ? fails + 1 : undefined,
    summariserCalls,
    refused: forwarded.filter((f) => f.status >= 400).length,
  };
}
