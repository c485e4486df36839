import { Injectable } from '@nestjs/common';

import {
  chooseRebuild,
  KEPT_TOOL_RESULTS,
  nextBlockSource,
  planCompaction,
  planRebuild,
  planResultClearing,
  rebuildInput,
  type RebuildInput,
} from '@guardian/compaction';

import { GuardianConfig } from '../../config/guardian-config';
import type { RequestContext } from '../handoff';
import { conversationPrefixHashes } from '../../formats/format-adapter';
import { blockSource, requestPlanInput } from './compaction-engine';
import { StretchService } from './stretch-service';

/**
 * Which measure guardian would take: none (the request fits, or nothing would make it smaller), old tool results
 * cleared, the memoized summary reused, a new summary written, or the big pastes spilled alone.
 */
export type ForecastMeasure = 'none' | 'cleared' | 'summary_reused' | 'summary_new' | 'spill';

export interface Forecast {
  /**
   * The planner's count of the request guardian would forward. With `summary_new` the summary is not written yet, so it
   * is counted at the longest the summariser may write: the request then forwarded is at most this.
   */
  tokens: number;
  measure: ForecastMeasure;
}

/**
 * What guardian would forward for a measured request (issue 28 item 4: a token count says it), decided as
 * CompactionEngine.decide decides it, from the same plan input and in the same order, but with nothing written,
 * archived or asked of the summariser: the memo is read, not counted, and a new summary is weighed at its upper bound
 * (nextBlockSource). Each spilled message is counted at its room, as the plan does.
 */
@Injectable()
export class ForwardForecast {
  constructor(
    private readonly config: GuardianConfig,
    private readonly stretches: StretchService,
  ) {}

  async forecast(ctx: RequestContext): Promise<Forecast> {
    const { conv, count, budget } = ctx;
    const unchanged: Forecast = { tokens: count.tokens, measure: 'none' };
    // A dry run forwards every request as it came (GUARDIAN_DRY_RUN, X-Guardian-Dry-Run).
    if (count.tokens <= budget.budget || ctx.dryRun) return unchanged;
    const entries = await this.stretches.lookup(ctx, conversationPrefixHashes(conv), { counted: false });
    const planned = requestPlanInput(ctx, this.config.compaction, entries);
    const plan = planCompaction(planned.input);
    if (plan.action === 'fits') return unchanged;
    if (plan.action === 'compact' && this.config.compaction.clearToolResults) {
      const cleared = planResultClearing(conv.messages, {
        keep: KEPT_TOOL_RESULTS,
        enough: count.tokens - budget.budget,
        counter: count.counter,
      });
      if (cleared) return { tokens: count.tokens - cleared.tokens, measure: 'cleared' };
    }
    let around: RebuildInput | undefined;
    let measure: ForecastMeasure = 'spill';
    const memo = planned.memo;
    if (plan.action === 'reuse' && memo) {
      around = planned.memoRebuild ?? rebuildInput(planned.block, blockSource(memo));
      measure = 'summary_reused';
    } else if (plan.action === 'compact' && this.stretches.worthSummarising(ctx, plan.from, plan.cut)) {
      const next = nextBlockSource(planned.block, memo && blockSource(memo), plan.cut);
      around = rebuildInput(planned.block, next);
      measure = 'summary_new';
    }
    const withCut = around ? planRebuild(around) : undefined;
    const chosen = chooseRebuild(count.tokens, withCut, () =>
      planRebuild(rebuildInput(planned.block, undefined)),
    );
    if (!chosen) return unchanged;
    return { tokens: chosen.tokens, measure: chosen.cut === 0 ? 'spill' : measure };
  }
}
