import { Injectable } from '@nestjs/common';

import { genAiAttributes, withSpan } from '@guardian/telemetry';

import { GuardianConfig } from '../config/guardian-config';
import { Observability } from '../observability/observability';
import { factsOf } from './answer-bookkeeping';
import { CompactionEngine } from './compaction-engine';
import { failOpenOf } from './compaction-errors';
import { ConversationReader } from './conversation-reader';
import type { Decision, PrepareInput, RequestContext } from './compaction-context';
import { ExchangeFactory, type Exchange } from './exchange';
import { FastPath } from './fast-path';
import { anthropicAdapter } from '../formats/anthropic.adapter';
import { chatAdapter } from '../formats/chat.adapter';
import type { FormatAdapter } from '../formats/format-adapter';
import { responsesAdapter } from '../formats/responses.adapter';
import { RequestMeasure } from './request-measure';
import { genAiSystem } from './summariser';
import { sessionOfConversation } from './session';
import { pickAuth } from './window.service';

const ADAPTERS: Record<string, FormatAdapter> = {
  chat: chatAdapter,
  messages: anthropicAdapter,
  responses: responsesAdapter,
};

/**
 * The compaction path of one owned request, from raw bytes to what is forwarded: parse (format adapter), resolve the
 * session, measure (window, budget, count), decide (CompactionEngine). It never throws: every failure inside forwards
 * the client's original bytes and is counted (ARCHITECTURE.md#fail-open rule 1). The returned Exchange then follows
 * the answer.
 */
@Injectable()
export class CompactionService {
  private readonly reader = new ConversationReader();

  constructor(
    private readonly config: GuardianConfig,
    private readonly measure: RequestMeasure,
    private readonly engine: CompactionEngine,
    private readonly obs: Observability,
    private readonly exchanges: ExchangeFactory,
    private readonly fast: FastPath,
  ) {}

  async prepare(input: PrepareInput): Promise<Exchange> {
    try {
      return await this.prepareOrThrow(input);
    } catch (err) {
      // Whatever a strange body makes the parsing or planning do, the client's bytes still go upstream
      // (ARCHITECTURE.md#fail-open rule 1).
      this.obs.failOpen('internal', 'prepare_exception', { route: input.route, reqId: input.reqId, err });
      return this.exchange({ input, adapter: ADAPTERS[input.route] ?? chatAdapter });
    }
  }

  /**
   * A request decided without parsing it, or undefined when only the full path can decide it (ADR 0013). Never
   * throws: a failure here only sends the request the full path.
   */
  fastPath(input: PrepareInput): Exchange | undefined {
    const adapter = ADAPTERS[input.route];
    if (!adapter) return undefined;
    let fast: ReturnType<FastPath['decide']>;
    try {
      fast = this.fast.decide(input, adapter);
    } catch (err) {
      this.obs.failOpen('internal', 'fast_path_exception', { route: input.route, reqId: input.reqId, err });
      return undefined;
    }
    if (!fast) return undefined;
    this.obs.state.passthroughBySize += 1;
    if (fast.session.ignored)
      this.obs.metrics.sessionHeaderIgnored.inc({ reason: fast.session.ignored.reason });
    return this.exchange({ input, adapter, decision: fast.decision, facts: fast.facts, fast: true });
  }

  /** The exchange with its request parsed and measured: a fast-path exchange is prepared in full (for recovery). */
  async complete(exchange: Exchange): Promise<Exchange> {
    if (!exchange.fast) return exchange;
    return this.prepare(exchange.req.input);
  }

  private exchange(req: Exchange['req']): Exchange {
    return this.exchanges.create(req);
  }

  private async prepareOrThrow(input: PrepareInput): Promise<Exchange> {
    const adapter = ADAPTERS[input.route];
    const passthrough = (): Exchange => this.exchange({ input, adapter: adapter ?? chatAdapter });
    if (!adapter) return passthrough();

    const read = this.reader.read(adapter, input.body, {
      countTools: this.config.compaction.countTools,
      sessionKey: `${input.owner?.owner ?? ''}\n${input.sessionHeader.kind === 'value' ? input.sessionHeader.value : ''}`,
    });
    if (read.kind === 'not-json') {
      // Malformed JSON is the client's to hear about from the upstream: forwarded byte for byte, never a guardian error.
      return passthrough();
    }
    if (read.kind === 'not-understood') {
      // A shape the engine does not understand (a stateful Responses call, an unknown item): forwarded unchanged.
      return passthrough();
    }
    const conv = read.conv;

    const session = sessionOfConversation(input.sessionHeader, conv, input.owner);
    if (session.ignored) this.obs.metrics.sessionHeaderIgnored.inc({ reason: session.ignored.reason });
    const dryHeader = input.headers['x-guardian-dry-run'];
    const dryRun = this.config.compaction.dryRun || dryHeader === '1' || dryHeader === 'true';
    const auth = pickAuth(input.upstreamHeaders);

    let ctx: RequestContext;
    try {
      const measured = await this.measure.measure(conv, adapter, auth);
      ctx = { input, adapter, conv, session, ...measured, auth, dryRun };
    } catch (err) {
      this.obs.failOpen('count', 'count_failed', {
        route: input.route,
        model: conv.model,
        reqId: input.reqId,
        err,
      });
      return passthrough();
    }

    let decision: Decision;
    try {
      decision = await withSpan(
        'guardian.compaction.decide',
        genAiAttributes({
          operation: 'chat',
          model: conv.model,
          system: genAiSystem(input.route),
          inputTokens: ctx.count.tokens,
        }),
        async (span) => {
          const d = await this.engine.decide(ctx);
          span.setAttributes({ 'guardian.outcome': d.outcome, 'guardian.tokens_after': d.tokensAfter });
          return d;
        },
      );
    } catch (thrown) {
      const { stage, reason, err } = failOpenOf(thrown);
      this.obs.failOpen(stage, reason, { route: input.route, model: conv.model, reqId: input.reqId, err });
      decision = {
        outcome: 'fail_open',
        tokensBefore: ctx.count.tokens,
        tokensAfter: ctx.count.tokens,
        rawForwarded: ctx.count.rawEstimate,
      };
    }
    return this.exchange({ input, adapter, ctx, decision, facts: factsOf(ctx) });
  }
}
