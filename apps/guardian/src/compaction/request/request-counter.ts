import { Injectable } from '@nestjs/common';

import { LruMap } from '@guardian/collections';
import { Calibration, requestChars, tokensForChars, type Counter } from '@guardian/compaction';
import { tokenizeCount, UpstreamClient, type HeaderMap } from '@guardian/upstream';

import { GuardianConfig } from '../../config/guardian-config';
import { chatForTokenizer } from '../../formats/chat-rendering';
import { countExactly } from '../../formats/exact-count';
import { jsonChars, type FormatAdapter, type ParsedConversation } from '../../formats/format-adapter';
import type { RequestCount } from '../handoff';
import { trackableModel } from './window.service';

/**
 * Models calibrated at once; names are the client's to choose, so the map is bounded (issue 12 defect 6). A usage
 * sample marks its model as used; the model sampled least recently is forgotten first.
 */
const MAX_CALIBRATED_MODELS = 256;

/** An estimate this close to the budget (either side) is worth an exact count. */
export const NEAR_BUDGET = 0.15;

/** Exact-count failures in a row, on one route, after which exact counting rests. */
export const EXACT_FAILURES = 3;
/**
 * How long exact counting rests on a route, by how many times in a row it has rested: 1, 2, 4, 8, then 10 minutes.
 * A backend with no /tokenize is then asked about once every 10 minutes; one whose tokenizer stalled for a while is
 * counted exactly again once it answers.
 */
export const EXACT_REST_MS = [60_000, 120_000, 240_000, 480_000, 600_000] as const;

/**
 * When to ask for an exact count, per route. After EXACT_FAILURES failures in a row (an upstream with no tokenizer,
 * one that refuses, one that does not answer within GUARDIAN_TOKENIZE_TIMEOUT_MS) the estimate stands without
 * asking, for the next step of EXACT_REST_MS; then one request asks again: an exact count ends the rest, a failure
 * starts the next one. Before, three failures stopped exact counting for the life of the process, so a tokenizer
 * stalled for a few seconds left every later request on the estimate (issue 30 item 8).
 */
export class ExactCountRest {
  private readonly routes = new Map<string, { failures: number; rested: number; until: number }>();

  allows(route: string, now = Date.now()): boolean {
    return (this.routes.get(route)?.until ?? 0) <= now;
  }

  success(route: string): void {
    this.routes.delete(route);
  }

  failure(route: string, now = Date.now()): void {
    const r = this.routes.get(route) ?? { failures: 0, rested: 0, until: 0 };
    r.failures += 1;
    // A failure of the one request asked after a rest starts the next rest at once.
    if (r.until > 0 || r.failures >= EXACT_FAILURES) {
      r.until = now + EXACT_REST_MS[Math.min(r.rested, EXACT_REST_MS.length - 1)]!;
      r.rested += 1;
    }
    this.routes.set(route, r);
  }
}

/**
 * Counts a request's tokens (issue 3 §2): characters / GUARDIAN_CHARS_PER_TOKEN over everything the request carries,
 * times a factor learned per (upstream, model) from the usage the upstream reports. Near the budget, and when the
 * upstream has a tokenizer endpoint, it asks for the exact count with a short timeout.
 */
@Injectable()
export class RequestCounter {
  private readonly calibrations = new LruMap<string, Calibration>(MAX_CALIBRATED_MODELS);
  /** When exact counts are asked for, per route: they rest after failures in a row (ExactCountRest). */
  private readonly exactRest = new ExactCountRest();

  constructor(
    private readonly config: GuardianConfig,
    private readonly upstream: UpstreamClient,
  ) {}

  counterFor(model: string): Counter {
    const cal = this.calibrations.peek(model);
    const factor = this.config.compaction.calibrate && cal ? cal.factor : 1;
    return { charsPerToken: this.config.compaction.charsPerToken, factor };
  }

  /** No usage sample yet for this model: the estimate is unproven (the budget keeps a margin: RequestStage). */
  unproven(model: string): boolean {
    return this.config.compaction.calibrate && (this.calibrations.peek(model)?.samples ?? 0) === 0;
  }

  isCalibrated(model: string): boolean {
    return this.config.compaction.calibrate && (this.calibrations.peek(model)?.calibrated ?? false);
  }

  estimate(conv: ParsedConversation): RequestCount {
    const counter = this.counterFor(conv.model);
    const chars = requestChars(conv.messages, conv.fixedChars);
    const rawEstimate = tokensForChars(chars, { ...counter, factor: 1 });
    const tokens = tokensForChars(chars, counter);
    return {
      tokens,
      rawEstimate,
      counter,
      source: this.isCalibrated(conv.model) ? 'calibrated' : 'estimate',
    };
  }

  /** The estimate, made exact by the upstream's tokenizer when it lands near the budget. */
  async count(
    conv: ParsedConversation,
    budget: number,
    headers: HeaderMap,
    adapter?: FormatAdapter,
  ): Promise<RequestCount> {
    const est = this.estimate(conv);
    // Chat counts through the backend's /tokenize; other formats through their own endpoint when they have one
    // (Anthropic: /v1/messages/count_tokens, issue 5).
    const viaAdapter = conv.route !== 'chat' && adapter?.exactCount ? adapter : undefined;
    if (conv.route !== 'chat' && !viaAdapter) return est;
    if (!this.exactRest.allows(conv.route)) return est;
    if (Math.abs(est.tokens - budget) > budget * NEAR_BUDGET) return est;
    const timeoutMs = this.config.compaction.tokenizeTimeoutMs;
    const tools = this.config.compaction.countTools ? conv.json.tools : undefined;
    const exact = viaAdapter
      ? await countExactly(viaAdapter, conv, {
          upstream: this.upstream,
          basePath: this.config.upstream.basePath,
          headers,
          timeoutMs,
        }).then((tokens) => (tokens === undefined ? undefined : { tokens, toolsEstimated: false }))
      : await tokenizeCount(this.upstream, {
          model: conv.model,
          messages: conv.items,
          raw: rawOf(conv, tools),
          flatText: () => conv.messages.map((m) => m.text).join('\n'),
          tools,
          toolTokens: tools === undefined ? 0 : tokensForChars(jsonChars(tools), est.counter),
          headers,
          timeoutMs,
        });
    if (exact === undefined) {
      this.exactRest.failure(conv.route);
      return est;
    }
    this.exactRest.success(conv.route);
    // The plan estimates each message with the counter; scaled to the exact total, its sums agree with the
    // upstream for this request (a dense paste the estimate undercounts would otherwise be kept as "fitting").
    const factor = est.rawEstimate > 0 ? exact.tokens / est.rawEstimate : est.counter.factor;
    return {
      ...est,
      tokens: exact.tokens,
      source: exact.toolsEstimated ? 'tokenize+estimate' : 'tokenize',
      counter: { ...est.counter, factor },
    };
  }

  /**
   * The backend tokenizer's count of a conversation of any route, rendered as chat (chatForTokenizer), whatever its
   * distance from the budget: what a token-count request is answered with where the upstream has no count endpoint
   * of its own (issue 28 item 4). Undefined when the backend has no /tokenize, refuses it or is late: the caller keeps
   * its estimate.
   */
  async tokenized(conv: ParsedConversation, headers: HeaderMap): Promise<RequestCount | undefined> {
    const est = this.estimate(conv);
    const chat = chatForTokenizer(conv);
    const tools = this.config.compaction.countTools ? chat.tools : undefined;
    const exact = await tokenizeCount(this.upstream, {
      model: conv.model,
      messages: chat.messages,
      flatText: () => chat.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n'),
      tools,
      toolTokens: tools === undefined ? 0 : tokensForChars(jsonChars(conv.json.tools), est.counter),
      headers,
      timeoutMs: this.config.compaction.tokenizeTimeoutMs,
    });
    if (exact === undefined) return undefined;
    return { ...est, tokens: exact.tokens, source: exact.toolsEstimated ? 'tokenize+estimate' : 'tokenize' };
  }

  /** One usage sample: the upstream's prompt tokens for a request whose raw estimate was `rawEstimate`. */
  observe(model: string, promptTokens: number, rawEstimate: number): void {
    if (!trackableModel(model)) return;
    let cal = this.calibrations.get(model);
    if (!cal) {
      cal = new Calibration();
      this.calibrations.set(model, cal);
    }
    cal.observe(promptTokens, rawEstimate);
  }
}

/** The client's own bytes of the messages (and tools), when the request was read with them (ConversationReader). */
function rawOf(conv: ParsedConversation, tools: unknown): { messages: Buffer; tools?: Buffer } | undefined {
  const raw = conv.raw;
  if (!raw) return undefined;
  const toolsRange = tools === undefined ? undefined : raw.fields.get('tools');
  return {
    messages: raw.body.subarray(raw.array.start, raw.array.end),
    tools:
      toolsRange && tools === conv.json.tools
        ? raw.body.subarray(toolsRange.start, toolsRange.end)
        : undefined,
  };
}
