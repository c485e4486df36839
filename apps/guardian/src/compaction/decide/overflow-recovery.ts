import { Injectable } from '@nestjs/common';

import { overflowRetryBudget } from '@guardian/compaction';
import { parseOverflow, peekBody, type UpstreamResponse } from '@guardian/upstream';

import { GuardianConfig } from '../../config/guardian-config';
import { reasonOf } from '../compaction-errors';
import type { Decision, RequestContext } from '../handoff';
import { CompactionEngine } from './compaction-engine';
import { DecideReporter } from './decide-reporter';
import { RequestCounter } from '../request/request-counter';
import { WindowService } from '../request/window.service';

/** An error answer is read (to recognise an overflow) up to this size; a bigger one goes to the client as it is. */
const MAX_ERROR_BODY = 1024 * 1024;

/**
 * One retry when the upstream refuses a request as too long (ARCHITECTURE.md#fail-open rule 5): the same request
 * decided again against the window and count the refusal taught (libs/compaction overflowRetryBudget). Any other
 * error answer, and a refused retry, reaches the client as the upstream sent it.
 */
@Injectable()
export class OverflowRecovery {
  constructor(
    private readonly config: GuardianConfig,
    private readonly windows: WindowService,
    private readonly counter: RequestCounter,
    private readonly engine: CompactionEngine,
    private readonly reporter: DecideReporter,
  ) {}

  /**
   * The answer the client gets for a refused request: the retry's when the refusal was an overflow and the retry was
   * accepted (with the retry's decision, which the answer then belongs to), else the upstream's own. `sent` is the
   * decision whose body was refused (undefined: the client's bytes).
   */
  async recover(
    ctx: RequestContext,
    sent: Decision | undefined,
    res: UpstreamResponse,
    resend: (body: Buffer) => Promise<UpstreamResponse>,
  ): Promise<{ res: UpstreamResponse; retry?: Decision }> {
    if (res.status < 400) return { res };
    const peeked = await peekBody(res.body, MAX_ERROR_BODY);
    const replay: UpstreamResponse = { ...res, body: peeked.body };
    const overflow = peeked.text === undefined ? undefined : parseOverflow(res.status, peeked.text);
    if (!overflow) return { res: replay };
    const retry = await this.retry(ctx, overflow, {
      raw: sent?.rawForwarded ?? ctx.count.rawEstimate,
      tokens: sent?.tokensAfter ?? ctx.count.tokens,
    });
    if (!retry?.body) {
      this.reporter.overflowRecovery(ctx);
      return { res: replay };
    }
    // The same bytes again would only be refused again (issue 30 item 11: the retry resent a request it could not
    // shorten): the client hears the first refusal, and the recovery is counted as failed.
    if (retry.body.equals(sent?.body ?? ctx.input.body)) {
      this.reporter.overflowRecovery(ctx);
      this.reporter.recoveryFailed(ctx, 'retry_unchanged', undefined);
      return { res: replay };
    }
    const second = await resend(retry.body);
    // The retry's compaction was counted by the engine, with reason "overflow".
    if (second.status < 400) {
      this.reporter.overflowRecovery(ctx, { shape: overflow.shape, retry });
      return { res: second, retry };
    }
    this.reporter.overflowRecovery(ctx);
    // A rejected retry: the client hears the upstream's own answer to it (ARCHITECTURE.md#fail-open rule 5).
    return { res: second };
  }

  /**
   * The request decided again. `sent` describes what was refused (the compacted body when this turn was compacted):
   * the upstream's count is of those bytes, so calibration and the retry's factor compare it with guardian's estimate
   * of the same bytes.
   */
  private async retry(
    ctx: RequestContext,
    learned: { window?: number; promptTokens?: number },
    sent: { raw: number; tokens: number },
  ): Promise<Decision | undefined> {
    let learnedWindow = learned.window;
    if (learnedWindow === undefined) {
      // No numbers in the answer (Ollama): ask the backend's discovery endpoints, which GUARDIAN_NUM_CTX skipped.
      const probed = await this.windows.probe(ctx.conv.model, ctx.auth);
      if (probed && probed.window < ctx.window.window) learnedWindow = probed.window;
    }
    if (learnedWindow) this.windows.learn(ctx.conv.model, learnedWindow);
    if (learned.promptTokens && sent.raw > 0)
      this.counter.observe(ctx.conv.model, learned.promptTokens, sent.raw);
    const { compaction } = this.config;
    const est = this.counter.estimate(ctx.conv);
    const aim = overflowRetryBudget({
      learned: { window: learnedWindow, promptTokens: learned.promptTokens },
      window: learnedWindow ?? ctx.window.window,
      threshold: compaction.threshold,
      reserveOutput: compaction.reserveOutput,
      sent,
      factor: est.counter.factor,
      rawEstimate: est.rawEstimate,
    });
    const retryCtx: RequestContext = {
      ...ctx,
      window: { window: aim.budget.window, source: 'learned:overflow' },
      budget: aim.budget,
      count: { ...est, counter: { ...est.counter, factor: aim.factor }, tokens: aim.tokens },
      reason: 'overflow',
    };
    try {
      const d = await this.engine.decide(retryCtx);
      return d.body ? d : undefined;
    } catch (err) {
      this.reporter.recoveryFailed(ctx, reasonOf(err), err);
      return undefined;
    }
  }
}
