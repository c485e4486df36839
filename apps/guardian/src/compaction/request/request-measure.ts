import { Injectable } from '@nestjs/common';

import { computeBudget, marginedBudget, type BudgetInfo } from '@guardian/compaction';
import type { HeaderMap } from '@guardian/upstream';

import { GuardianConfig } from '../../config/guardian-config';
import type { WindowInfo } from '../../state/guardian-state';
import type { FormatAdapter, ParsedConversation } from '../../formats/format-adapter';
import type { RequestCount } from '../handoff';
import { RequestCounter } from './request-counter';
import { WindowService } from './window.service';

export interface Measured {
  window: WindowInfo;
  budget: BudgetInfo;
  count: RequestCount;
}

/**
 * How big a request is and how big it may be (ARCHITECTURE.md#compaction): the model's window, the seed's budget, and
 * the count.
 * While the count is unproven (calibration on but no usage sample yet, and no exact count for this request), the
 * budget keeps a margin back: docs/adr/0003-counting.md, amendment.
 */
@Injectable()
export class RequestMeasure {
  constructor(
    private readonly config: GuardianConfig,
    private readonly windows: WindowService,
    private readonly counter: RequestCounter,
  ) {}

  async measure(conv: ParsedConversation, adapter: FormatAdapter, auth: HeaderMap): Promise<Measured> {
    const { compaction } = this.config;
    const window = await this.windows.windowFor(conv.model, auth);
    const full = computeBudget(window.window, compaction.threshold, compaction.reserveOutput);
    const count = await this.counter.count(conv, full.budget, auth, adapter);
    const unproven = count.source === 'estimate' && this.counter.unproven(conv.model);
    return { window, budget: marginedBudget(full, unproven), count };
  }
}
