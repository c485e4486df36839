import { Injectable } from '@nestjs/common';

import { RECALL_TOOL_NAMES } from '@guardian/compaction';

import type { ObservedAnswer } from '../../formats/format-adapter';
import { SpanRecorder } from '../decide/span-recorder';
import type { AnswerFacts, Decision } from '../handoff';
import { AnswerReporter } from './answer-reporter';
import { CaptureService } from './capture.service';
import { UsageRecorder } from './usage-recorder';
import { UsageSample, type UnreadRequest } from './usage-sample';

/**
 * What follows an answered request, behind it: the calibration sample (or a truncation the backend did not report:
 * UsageSample), recall tool calls for the receipts, the
 * capture journal, and the session's usage (UsageRecorder). Nothing here can fail the request.
 */
@Injectable()
export class AnswerBookkeeping {
  constructor(
    private readonly sample: UsageSample,
    private readonly recorder: SpanRecorder,
    private readonly capture: CaptureService,
    private readonly usage: UsageRecorder,
    private readonly reporter: AnswerReporter,
  ) {}

  /** `unread`: the request's bytes, when the fast path forwarded them without reading them. */
  async record(
    facts: AnswerFacts,
    d: Decision,
    observed: ObservedAnswer,
    unread?: UnreadRequest,
  ): Promise<void> {
    this.sample.take(facts, d, observed.promptTokens, unread);
    for (const name of observed.toolNames) {
      if (!RECALL_TOOL_NAMES.has(name)) continue;
      this.reporter.recallToolCall(name);
      await this.recorder.recallToolCall(facts.ownerHash);
    }
    if (facts.items)
      this.capture.record({
        sessionHash: facts.sessionHash,
        ownerHash: facts.ownerHash,
        sessionName: facts.sessionName,
        route: facts.route,
        messages: facts.items,
      });
    await this.usage.record(facts, d, observed.promptTokens);
  }
}
