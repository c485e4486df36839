import { Injectable } from '@nestjs/common';

import { genAiAttributes, withSpan } from '@guardian/telemetry';
import { requestHeadersForUpstream } from '@guardian/upstream';

import { GuardianConfig } from '../config/guardian-config';
import { Observability } from '../observability/observability';
import { AnswerBookkeeping } from './answer-bookkeeping';
import { CompactionEngine } from './compaction-engine';
import { failOpenOf } from './compaction-errors';
import type { Decision, PrepareInput, RequestContext } from './compaction-context';
import { Exchange } from './exchange';
import { Precompactor } from './precompactor';
import { anthropicAdapter } from '../formats/anthropic.adapter';
import { chatAdapter } from '../formats/chat.adapter';
import { isObject, str, type FormatAdapter } from '../formats/format-adapter';
import { responsesAdapter } from '../formats/responses.adapter';
import { RequestMeasure } from './request-measure';
import { genAiSystem } from './summariser';
import { resolveSession } from './session';
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
  constructor(
    private readonly config: GuardianConfig,
    private readonly measure: RequestMeasure,
    private readonly engine: CompactionEngine,
    private readonly obs: Observability,
    private readonly bookkeeping: AnswerBookkeeping,
    private readonly precompactor: Precompactor,
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

  private exchange(req: ConstructorParameters<typeof Exchange>[1]): Exchange {
    return new Exchange(
      { obs: this.obs, bookkeeping: this.bookkeeping, precompactor: this.precompactor },
      req,
    );
  }

  private async prepareOrThrow(input: PrepareInput): Promise<Exchange> {
    const adapter = ADAPTERS[input.route];
    const passthrough = (): Exchange => this.exchange({ input, adapter: adapter ?? chatAdapter });
    if (!adapter) return passthrough();

    let json: unknown;
    try {
      json = JSON.parse(input.body.toString('utf8'));
    } catch {
      // Malformed JSON is the client's to hear about from the upstream: forwarded byte for byte, never a guardian error.
      return passthrough();
    }
    const conv = adapter.parse(json, { countTools: this.config.compaction.countTools });
    if (!conv) {
      // A shape the engine does not understand (a stateful Responses call, an unknown item): forwarded unchanged.
      return passthrough();
    }

    const firstSystem = topLevelSystemText(conv.json.system) || str(conv.json.instructions);
    const session = resolveSession(input.sessionHeader, conv.model, conv.messages, firstSystem, input.owner);
    if (session.ignored) this.obs.metrics.sessionHeaderIgnored.inc({ reason: session.ignored.reason });
    const dryHeader = input.headers['x-guardian-dry-run'];
    const dryRun = this.config.compaction.dryRun || dryHeader === '1' || dryHeader === 'true';
    const auth = pickAuth(requestHeadersForUpstream(input.headers));

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
    return this.exchange({ input, adapter, ctx, decision });
  }
}

/** Anthropic's top-level `system` as text, whether a string or text blocks (Claude Code sends blocks). */
function topLevelSystemText(system: unknown): string {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) return '';
  return system
    .filter((b): b is Record<string, unknown> => isObject(b) && b.type === 'text')
    .map((b) => str(b.text))
    .join('\n');
}
