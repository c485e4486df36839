import { Injectable } from '@nestjs/common';

import { computeBudget, marginedBudget } from '@guardian/compaction';
import type { HeaderMap } from '@guardian/upstream';

import { GuardianConfig } from '../../config/guardian-config';
import { anthropicAdapter } from '../../formats/anthropic.adapter';
import { chatAdapter } from '../../formats/chat.adapter';
import type { FormatAdapter, ParsedConversation } from '../../formats/format-adapter';
import { responsesAdapter } from '../../formats/responses.adapter';
import {
  preparedRequest,
  type AnswerFacts,
  type PrepareInput,
  type PreparedRequest,
  type RequestContext,
} from '../handoff';
import { ConversationReader } from './conversation-reader';
import { FastPath } from './fast-path';
import { RequestReporter } from './request-reporter';
import { addSessionFacts, sessionOfConversation } from './session';
import { usageCandidate } from './usage-selection';
import { RequestCounter } from './request-counter';
import { pickAuth, WindowService } from './window.service';

const ADAPTERS: Record<string, FormatAdapter> = {
  chat: chatAdapter,
  messages: anthropicAdapter,
  responses: responsesAdapter,
};

/** The format adapter of a route by name (an archived span's `route`), if guardian reads that route. */
export function adapterFor(route: string): FormatAdapter | undefined {
  return Object.hasOwn(ADAPTERS, route) ? ADAPTERS[route] : undefined;
}

/** The format adapter of an owned route. */
export function adapterOf(input: PrepareInput): FormatAdapter {
  return ADAPTERS[input.route] ?? chatAdapter;
}

/**
 * What reading a request came to: measured, with the facts its answer's bookkeeping will need, or forwarded as the
 * client sent it.
 */
export type ReadRequest =
  | { kind: 'measured'; ctx: RequestContext; facts: AnswerFacts }
  | { kind: 'unchanged'; request: PreparedRequest };

/**
 * The request stage (ARCHITECTURE.md#request-path): the fast path's size proof (ADR 0013), or the body read into
 * neutral messages through its format adapter, its session resolved, and its window, budget and count measured
 * (ARCHITECTURE.md#compaction).
 * A body that is not JSON, a shape the engine does not understand, or a count that failed goes on unchanged.
 */
@Injectable()
export class RequestStage {
  private readonly reader = new ConversationReader();

  constructor(
    private readonly config: GuardianConfig,
    private readonly windows: WindowService,
    private readonly counter: RequestCounter,
    private readonly fast: FastPath,
    private readonly reporter: RequestReporter,
  ) {}

  /** The request decided without parsing it, or undefined when only the full path can decide it. Never throws. */
  fastPath(input: PrepareInput): PreparedRequest | undefined {
    const adapter = ADAPTERS[input.route];
    if (!adapter) return undefined;
    let fast: ReturnType<FastPath['decide']>;
    try {
      fast = this.fast.decide(input, adapter);
    } catch (err) {
      this.reporter.fastPathFailed(input, err);
      return undefined;
    }
    if (!fast) return undefined;
    this.reporter.passedBySize();
    if (fast.session.ignored) this.reporter.sessionHeaderIgnored(fast.session.ignored.reason);
    return preparedRequest({ input, adapter, decision: fast.decision, facts: fast.facts, fast: true });
  }

  /** The request read and measured. Throws only for the caller to fail open. */
  async read(input: PrepareInput): Promise<ReadRequest> {
    const adapter = adapterOf(input);
    const unchanged: ReadRequest = { kind: 'unchanged', request: preparedRequest({ input, adapter }) };
    if (!ADAPTERS[input.route]) return unchanged;
    const read = this.reader.read(adapter, input.body, {
      countTools: this.config.compaction.countTools,
      sessionKey: `${input.owner?.owner ?? ''}\n${input.sessionHeader.kind === 'value' ? input.sessionHeader.value : ''}`,
    });
    // Malformed JSON is the client's to hear about from the upstream, and a shape the engine does not understand (a
    // stateful Responses call, an unknown item) is not guardian's to change: both are forwarded byte for byte.
    if (read.kind !== 'conversation') return unchanged;
    const conv = read.conv;

    const session = sessionOfConversation(input.sessionHeader, conv, input.owner);
    if (session.ignored) this.reporter.sessionHeaderIgnored(session.ignored.reason);
    const dryHeader = input.headers['x-guardian-dry-run'];
    const dryRun = this.config.compaction.dryRun || dryHeader === '1' || dryHeader === 'true';
    const auth = pickAuth(input.upstreamHeaders);
    try {
      const measured = await this.measure(conv, adapter, auth);
      const ctx: RequestContext = { input, adapter, conv, session, ...measured, auth, dryRun };
      return { kind: 'measured', ctx, facts: factsOf(ctx) };
    } catch (err) {
      this.reporter.countFailed(input, conv.model, err);
      return unchanged;
    }
  }

  /**
   * How big a request is and how big it may be: the model's window, the seed's budget, and the count. While the count
   * is unproven (calibration on but no usage sample yet, and no exact count for this request), the budget keeps a
   * margin back: docs/adr/0003-counting.md, amendment.
   */
  private async measure(
    conv: ParsedConversation,
    adapter: FormatAdapter,
    auth: HeaderMap,
  ): Promise<Pick<RequestContext, 'window' | 'budget' | 'count'>> {
    const { compaction } = this.config;
    const window = await this.windows.windowFor(conv.model, auth);
    const full = computeBudget(window.window, compaction.threshold, compaction.reserveOutput);
    const count = await this.counter.count(conv, full.budget, auth, adapter);
    const unproven = count.source === 'estimate' && this.counter.unproven(conv.model);
    return { window, budget: marginedBudget(full, unproven), count };
  }
}

/** The facts of a parsed and measured request, for its answer's bookkeeping. */
function factsOf(ctx: RequestContext): AnswerFacts {
  const facts: AnswerFacts = {
    sessionHash: ctx.session.hash,
    model: ctx.conv.model,
    route: ctx.conv.route,
    window: ctx.window.window,
    countSource: ctx.count.source,
    candidate: usageCandidate(ctx.conv.json),
    items: ctx.conv.items,
  };
  addSessionFacts(facts, ctx.session);
  return facts;
}
