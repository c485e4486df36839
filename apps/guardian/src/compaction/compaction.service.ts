import { Injectable } from '@nestjs/common';

import { genAiAttributes, withSpan } from '@guardian/telemetry';
import type { UpstreamResponse } from '@guardian/upstream';

import { FailOpen } from '../observability/fail-open';
import { ExchangeFactory, type Exchange, type ExchangeTiming } from './answer/exchange';
import { failOpenOf } from './compaction-errors';
import { CompactionEngine } from './decide/compaction-engine';
import { OverflowRecovery } from './decide/overflow-recovery';
import { genAiSystem } from './decide/summariser';
import {
  preparedRequest,
  type Decision,
  type PrepareInput,
  type PreparedRequest,
  type RequestContext,
} from './handoff';
import { adapterOf, RequestStage } from './request/request-stage';

/**
 * Compaction of one owned request, its three stages in the order a request meets them (ARCHITECTURE.md#request-path):
 * the request stage reads and measures it (or proves by its size that it fits), the decide stage says what is
 * forwarded, and once the upstream has answered the answer stage follows the answer. `prepare` and `recover` never
 * throw: every failure inside forwards the client's original bytes and is counted (ARCHITECTURE.md#fail-open rule 1).
 */
@Injectable()
export class CompactionService {
  constructor(
    private readonly requests: RequestStage,
    private readonly engine: CompactionEngine,
    private readonly recovery: OverflowRecovery,
    private readonly answers: ExchangeFactory,
    private readonly failOpen: FailOpen,
  ) {}

  /** A request whose size alone proves it fits, decided without parsing it (ADR 0013); else undefined. */
  fastPath(input: PrepareInput): PreparedRequest | undefined {
    return this.requests.fastPath(input);
  }

  /** The full path: read, measure, decide. */
  async prepare(input: PrepareInput): Promise<PreparedRequest> {
    return this.read(input, (ctx) => this.decide(ctx));
  }

  /**
   * An error answer to `request`: when it is an overflow, the request decided again against what the refusal taught
   * and sent once more (ARCHITECTURE.md#fail-open rule 5). Returns the request the answer belongs to, and the answer.
   * A fast-path request is read and measured first; it is not decided again (its size proved it fits).
   */
  async recover(
    request: PreparedRequest,
    res: UpstreamResponse,
    resend: (body: Buffer) => Promise<UpstreamResponse>,
  ): Promise<{ request: PreparedRequest; res: UpstreamResponse }> {
    // A fast-path request is read now, with the decision the full path makes of a request that fits.
    const measured = request.fast
      ? await this.read(request.input, async (ctx) => unchangedDecision(ctx))
      : request;
    const ctx = measured.ctx;
    if (!ctx) return { request: measured, res };
    const out = await this.recovery.recover(ctx, measured.decision, res, resend);
    return {
      request: out.retry
        ? { ...measured, body: out.retry.body ?? measured.body, decision: out.retry }
        : measured,
      res: out.res,
    };
  }

  /**
   * The request read and measured, not decided: what a token-count endpoint answers from (issue 28 item 4).
   * Undefined when guardian cannot read it; never throws (the caller then passes the upstream's answer on).
   */
  async measure(input: PrepareInput): Promise<RequestContext | undefined> {
    try {
      const read = await this.requests.read(input);
      return read.kind === 'measured' ? read.ctx : undefined;
    } catch (err) {
      this.failOpen.report('internal', 'prepare_exception', { route: input.route, reqId: input.reqId, err });
      return undefined;
    }
  }

  /** Follows the answer the upstream gave to `request`. */
  follow(request: PreparedRequest, timing: ExchangeTiming): Exchange {
    return this.answers.create(request, timing);
  }

  /** The request read and measured, then decided by `decide`; any failure forwards the client's bytes. */
  private async read(
    input: PrepareInput,
    decide: (ctx: RequestContext) => Promise<Decision>,
  ): Promise<PreparedRequest> {
    try {
      const read = await this.requests.read(input);
      if (read.kind === 'unchanged') return read.request;
      const { ctx, facts } = read;
      return preparedRequest({ input, adapter: ctx.adapter, ctx, decision: await decide(ctx), facts });
    } catch (err) {
      // Whatever a strange body makes the parsing or planning do, the client's bytes still go upstream
      // (ARCHITECTURE.md#fail-open rule 1).
      this.failOpen.report('internal', 'prepare_exception', { route: input.route, reqId: input.reqId, err });
      return preparedRequest({ input, adapter: adapterOf(input) });
    }
  }

  /** The decide stage, inside its trace span; a failure there forwards the client's bytes. */
  private async decide(ctx: RequestContext): Promise<Decision> {
    const { conv } = ctx;
    try {
      return await withSpan(
        'guardian.compaction.decide',
        genAiAttributes({
          operation: 'chat',
          model: conv.model,
          system: genAiSystem(ctx.input.route),
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
      this.failOpen.report(stage, reason, {
        route: ctx.input.route,
        model: conv.model,
        reqId: ctx.input.reqId,
        err,
      });
      return { ...unchangedDecision(ctx), outcome: 'fail_open' };
    }
  }
}

/** The decision that forwards a measured request as the client sent it. */
function unchangedDecision(ctx: RequestContext): Decision {
  return {
    outcome: 'passthrough',
    tokensBefore: ctx.count.tokens,
    tokensAfter: ctx.count.tokens,
    rawForwarded: ctx.count.rawEstimate,
  };
}
