import { Injectable } from '@nestjs/common';

import { computeBudget } from '@guardian/compaction';
import { genAiAttributes, withSpan } from '@guardian/telemetry';
import { requestHeadersForUpstream } from '@guardian/upstream';

import { GuardianConfig } from '../config/guardian-config';
import { Observability } from '../observability/observability';
import { CompactionDeps } from './compaction-deps';
import { CompactionEngine } from './compaction-engine';
import type { Decision, PrepareInput, RequestContext } from './compaction-context';
import { Exchange } from './exchange';
import { anthropicAdapter } from './formats/anthropic.adapter';
import { chatAdapter } from './formats/chat.adapter';
import { isObject, str, type FormatAdapter } from './formats/format-adapter';
import { responsesAdapter } from './formats/responses.adapter';
import { RequestCounter } from './request-counter';
import { genAiSystem } from './summariser';
import { resolveSession } from './session';
import { pickAuth, WindowService } from './window.service';

const ADAPTERS: Record<string, FormatAdapter> = {
  chat: chatAdapter,
  messages: anthropicAdapter,
  responses: responsesAdapter,
};

/**
 * The compaction path of one owned request, from raw bytes to what is forwarded. It never throws: every failure
 * inside forwards the client's original bytes and is counted (CONTRACTS §2 rule 1). The returned Exchange then
 * follows the answer (usage for calibration, overflow recovery, /guardian/usage).
 */
@Injectable()
export class CompactionService {
  constructor(
    private readonly config: GuardianConfig,
    private readonly windows: WindowService,
    private readonly counter: RequestCounter,
    private readonly engine: CompactionEngine,
    private readonly obs: Observability,
    private readonly deps: CompactionDeps,
  ) {}

  async prepare(input: PrepareInput): Promise<Exchange> {
    try {
      return await this.prepareOrThrow(input);
    } catch (err) {
      // Whatever a strange body makes the parsing or planning do, the client's bytes still go upstream (CONTRACTS §2.1).
      this.obs.failOpen('internal', 'prepare_exception', { route: input.route, reqId: input.reqId, err });
      return new Exchange(this.exchangeDeps(), { input, adapter: ADAPTERS[input.route] ?? chatAdapter });
    }
  }

  private async prepareOrThrow(input: PrepareInput): Promise<Exchange> {
    const adapter = ADAPTERS[input.route];
    const passthrough = (): Exchange =>
      new Exchange(this.exchangeDeps(), { input, adapter: adapter ?? chatAdapter });
    if (!adapter) return passthrough();

    let json: unknown;
    try {
      json = JSON.parse(input.body.toString('utf8'));
    } catch {
      // Malformed JSON is the client's to hear about from the upstream: forwarded byte for byte, never a guardian error.
      this.obs.state.passthroughUnparsed += 1;
      return passthrough();
    }
    const conv = adapter.parse(json, { countTools: this.config.env.GUARDIAN_COUNT_TOOLS });
    if (!conv) {
      // A shape the engine does not understand (a stateful Responses call, an unknown item): forwarded unchanged.
      this.obs.state.passthroughStateful += 1;
      return passthrough();
    }

    const firstSystem = topLevelSystemText(conv.json.system) || str(conv.json.instructions);
    const session = resolveSession(input.headers, conv.model, conv.messages, firstSystem);
    if (session.warning) this.obs.metrics.sessionHeaderIgnored.inc();
    const dryHeader = input.headers['x-guardian-dry-run'];
    const dryRun = this.config.env.GUARDIAN_DRY_RUN || dryHeader === '1' || dryHeader === 'true';
    const auth = pickAuth(requestHeadersForUpstream(input.headers));

    let ctx: RequestContext;
    try {
      const window = await this.windows.windowFor(conv.model, auth);
      const env = this.config.env;
      const budget = computeBudget(
        window.window,
        env.GUARDIAN_COMPACT_THRESHOLD,
        env.GUARDIAN_RESERVE_OUTPUT,
      );
      const count = await this.counter.count(conv, budget.budget, auth, adapter);
      ctx = { input, adapter, conv, session, window, budget, count, auth, dryRun };
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
    } catch (err) {
      const stage = stageOf(err);
      this.obs.failOpen(stage, codeOf(err), {
        route: input.route,
        model: conv.model,
        reqId: input.reqId,
        err,
      });
      decision = {
        outcome: 'fail_open',
        tokensBefore: ctx.count.tokens,
        tokensAfter: ctx.count.tokens,
        rawForwarded: ctx.count.rawEstimate,
      };
    }
    return new Exchange(this.exchangeDeps(), { input, adapter, ctx, decision });
  }

  /**
   * Overflow recovery: the same request, decided again against the window and count the upstream just told us.
   * `sent` describes what was rejected (the compacted body when this turn was compacted): the upstream's count is
   * of those bytes, so calibration and the retry's factor compare it with guardian's estimate of the same bytes.
   */
  async retryAfterOverflow(
    ctx: RequestContext,
    learned: { window?: number; promptTokens?: number },
    sent: { rawForwarded: number; tokensForwarded: number },
  ): Promise<Decision | undefined> {
    let learnedWindow = learned.window;
    if (learnedWindow === undefined) {
      // No numbers in the answer (Ollama): ask the backend's discovery endpoints, which GUARDIAN_NUM_CTX skipped.
      const probed = await this.windows.probe(ctx.conv.model, ctx.auth);
      if (probed && probed.window < ctx.window.window) learnedWindow = probed.window;
    }
    if (learnedWindow) this.windows.learn(ctx.conv.model, learnedWindow);
    if (learned.promptTokens && sent.rawForwarded > 0) {
      this.counter.observe(ctx.conv.model, learned.promptTokens, sent.rawForwarded);
    }
    const env = this.config.env;
    const window = learnedWindow ?? ctx.window.window;
    let budget = computeBudget(window, env.GUARDIAN_COMPACT_THRESHOLD, env.GUARDIAN_RESERVE_OUTPUT);
    if (learnedWindow === undefined && learned.promptTokens === undefined) {
      // Nothing learned at all, yet what was sent did not fit: aim a quarter below it rather than resend as much.
      const aim = Math.max(1, Math.floor(sent.tokensForwarded * 0.75));
      if (aim < budget.budget) budget = { ...budget, budget: aim };
    }
    const est = this.counter.estimate(ctx.conv);
    // The upstream's own count wins over any estimate: scale our per-message estimate to match it for this retry.
    const factor =
      learned.promptTokens && sent.rawForwarded > 0
        ? Math.max(est.counter.factor, learned.promptTokens / sent.rawForwarded)
        : est.counter.factor * 1.1;
    const counter = { ...est.counter, factor };
    const tokens = Math.max(learned.promptTokens ?? 0, Math.ceil(est.rawEstimate * factor));
    const retryCtx: RequestContext = {
      ...ctx,
      window: { window, source: 'learned:overflow' },
      budget,
      count: { ...est, counter, tokens, source: est.source },
      reason: 'overflow',
    };
    try {
      const d = await this.engine.decide(retryCtx);
      return d.body ? d : undefined;
    } catch (err) {
      this.obs.failOpen('recovery', codeOf(err), {
        route: ctx.conv.route,
        model: ctx.conv.model,
        reqId: ctx.input.reqId,
        err,
      });
      return undefined;
    }
  }

  private exchangeDeps() {
    return {
      service: this,
      counter: this.counter,
      obs: this.obs,
      memo: this.deps.memo,
      sessions: this.deps.sessions,
      recorder: this.deps.recorder,
      capture: this.deps.capture,
    };
  }
}

function codeOf(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') {
    return (err as { code: string }).code.toLowerCase();
  }
  return 'exception';
}

function stageOf(err: unknown): 'summarise' | 'memo' | 'archive' | 'internal' {
  const code = codeOf(err);
  if (code.startsWith('summary') || code.startsWith('transcript')) return 'summarise';
  if (code.startsWith('memo')) return 'memo';
  if (code.startsWith('archive')) return 'archive';
  return 'internal';
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
