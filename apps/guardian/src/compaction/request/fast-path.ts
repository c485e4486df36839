import { Injectable } from '@nestjs/common';

import { Calibration, computeBudget, sizeProvesFit, type BudgetInfo } from '@guardian/compaction';

import { GuardianConfig } from '../../config/guardian-config';
import type { AnswerFacts, Decision, PrepareInput, ResolvedSession, UsageCandidate } from '../handoff';
import { DerivedSessions } from './derived-session';
import type { FormatAdapter } from '../../formats/format-adapter';
import { outlineOnce, parseRange, stringField, type Outline } from '../../formats/json-outline';
import { NEAR_BUDGET, RequestCounter } from './request-counter';
import { addSessionFacts, resolveSession } from './session';
import { WindowService } from './window.service';

/** The array of items each route's requests carry. */
const ITEMS: Record<string, string> = { chat: 'messages', messages: 'messages', responses: 'input' };

/**
 * Content each route's adapter counts at a fixed size, not by its bytes (an image's URL is short): a body holding
 * any of these goes the full path. Searched as they are written in a type (`image_url`, `"image"`, `input_file`),
 * from a byte that is rare in prose where possible: Buffer#indexOf skips ahead to the first byte, and a common one
 * made this search cost more than the rest of the fast path.
 */
const FIXED_SIZE_MARKERS: Record<string, Buffer[]> = {
  chat: ['_url', '_image'].map((m) => Buffer.from(m)),
  messages: ['"image"', '"document"'].map((m) => Buffer.from(m)),
  responses: ['_image', '_file', '_reference'].map((m) => Buffer.from(m)),
};

const OUTPUT_LIMIT_KEYS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'];

/** What the fast path decided for one request. */
export interface FastDecision {
  decision: Decision;
  facts: AnswerFacts;
  session: ResolvedSession;
}

/**
 * Requests that fit, decided without parsing them (ADR 0013). A request whose byte length, at the calibration's
 * worst factor, is below the margined budget of a model whose window is already known cannot need compaction, an
 * exact count or a pre-compaction, so the full path would forward it unchanged; here it is, after reading only what
 * the answer's bookkeeping needs (model, session, tools count, output limit) from the body's outline. Anything this
 * cannot prove (an unknown window, a model not calibrated yet, images, a body that is not a JSON object, capture on)
 * goes the full path.
 */
@Injectable()
export class FastPath {
  private readonly derived = new DerivedSessions();

  constructor(
    private readonly config: GuardianConfig,
    private readonly windows: WindowService,
    private readonly counter: RequestCounter,
  ) {}

  /** The budget of a window (the seed's rule); one function, so the window service can cache its largest. */
  private readonly budgetOf = (window: number): BudgetInfo => {
    const { threshold, reserveOutput } = this.config.compaction;
    return computeBudget(window, threshold, reserveOutput);
  };

  /** The size proof: `bytes` at the calibration's worst factor fits well inside `budget`. */
  private fits(bytes: number, budget: BudgetInfo): boolean {
    const { compaction, summariser } = this.config;
    return sizeProvesFit({
      bytes,
      charsPerToken: compaction.charsPerToken,
      budget,
      nearBudget: NEAR_BUDGET,
      precompactThreshold: summariser.memo ? summariser.precompact.threshold : 0,
      maxFactor: Calibration.MAX_FACTOR,
    });
  }

  decide(input: PrepareInput, adapter: FormatAdapter): FastDecision | undefined {
    const { compaction, archive } = this.config;
    // The capture journal records every message: only the full path has them.
    if (archive.capture !== 'off') return undefined;
    const body = input.body;
    // Cheapest first: a body the size proof rejects even at the largest budget of any known window cannot be proven
    // to fit whatever its model is (every turn of a long conversation): no marker search, no outline.
    if (!this.fits(body.length, this.windows.largestBudget(this.budgetOf))) return undefined;
    const markers = FIXED_SIZE_MARKERS[input.route] ?? [];
    for (const m of markers) if (body.indexOf(m) !== -1) return undefined;
    const itemsKey = ITEMS[input.route] ?? 'messages';
    const o = outlineOnce(body, [itemsKey, 'tools']);
    if (!o) return undefined;
    const items = o.items.get(itemsKey);
    // A stateful Responses call, or one whose input is a string: the full path decides what it is.
    if (!items || o.fields.has('previous_response_id')) return undefined;
    const model = stringField(body, o, 'model');
    if (model === undefined) return undefined;
    // Calibration learns from the full path's estimates; until a model has its samples, its requests feed it.
    if (compaction.calibrate && !this.counter.isCalibrated(model)) return undefined;
    const window = this.windows.known(model);
    if (!window) return undefined;
    if (!this.fits(body.length, this.budgetOf(window.window))) return undefined;
    const session =
      input.sessionHeader.kind === 'value'
        ? resolveSession(input.sessionHeader, model, [], '', input.owner)
        : this.derived.of({ body, o, itemsKey, items, model, adapter }, input.sessionHeader, input.owner);
    if (!session) return undefined;
    // What the usage record shows when the upstream reports no usage: the byte count at today's factor, an
    // overestimate by the JSON punctuation.
    const counter = this.counter.counterFor(model);
    const tokens = Math.ceil((body.length / counter.charsPerToken) * counter.factor);
    const candidate: UsageCandidate = { tools: o.items.get('tools')?.length ?? 0 };
    const limit = outputLimit(body, o);
    if (limit !== undefined) candidate.maxOutputTokens = limit;
    const facts: AnswerFacts = {
      sessionHash: session.hash,
      model,
      route: input.route,
      window: window.window,
      countSource: this.counter.isCalibrated(model) ? 'calibrated' : 'estimate',
      candidate,
      ignoredWarning: session.ignored,
    };
    addSessionFacts(facts, session);
    return {
      session,
      decision: { outcome: 'passthrough', tokensBefore: tokens, tokensAfter: tokens, rawForwarded: 0 },
      facts,
    };
  }
}

/** The request's output limit, read as usageCandidate reads it (the first of the three names that is a number). */
function outputLimit(body: Buffer, o: Outline): number | undefined {
  for (const key of OUTPUT_LIMIT_KEYS) {
    const r = o.fields.get(key);
    if (!r) continue;
    const v = parseRange(body, r);
    if (typeof v === 'number' && Number.isFinite(v)) return v;
  }
  return undefined;
}
