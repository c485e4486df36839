import { Injectable } from '@nestjs/common';

import { RECALL_TOOL_NAMES } from '@guardian/compaction';
import { MemoStore } from '@guardian/memo';

import { Observability } from '../observability/observability';
import { CaptureService } from './capture.service';
import type { Decision, RequestContext } from './compaction-context';
import type { ObservedAnswer } from '../formats/format-adapter';
import { RequestCounter } from './request-counter';
import { SessionTable } from './session-table';
import { SpanRecorder } from './span-recorder';
import { chooseUsage, usageCandidate } from './usage-selection';

/**
 * What follows an answered request, behind it: the calibration sample, recall tool calls for the receipts, the
 * capture journal, the session's LRU slot and its `/guardian/usage` record, which follows the session's main
 * conversation and not its probes or helper requests (ADR 0010). Nothing here can fail the request.
 */
@Injectable()
export class AnswerBookkeeping {
  constructor(
    private readonly counter: RequestCounter,
    private readonly memo: MemoStore,
    private readonly sessions: SessionTable,
    private readonly recorder: SpanRecorder,
    private readonly capture: CaptureService,
    private readonly obs: Observability,
  ) {}

  async record(ctx: RequestContext, d: Decision, observed: ObservedAnswer): Promise<void> {
    const obs = this.obs;
    const model = ctx.conv.model;
    if (observed.promptTokens !== undefined && d.rawForwarded > 0)
      this.counter.observe(model, observed.promptTokens, d.rawForwarded);
    for (const name of observed.toolNames) {
      if (!RECALL_TOOL_NAMES.has(name)) continue;
      obs.metrics.recallToolCalls.inc({ tool: name });
      await this.recorder.recallToolCall(ctx.session.ownerHash);
    }
    this.capture.record({
      sessionHash: ctx.session.hash,
      ownerHash: ctx.session.ownerHash,
      route: ctx.conv.route,
      messages: ctx.conv.items,
    });
    this.sessions.touch(ctx.session.hash, d.compactedAt);
    obs.metrics.activeSessions.set(this.sessions.size);
    const previous = await this.memo.getUsage(ctx.session.hash);
    const candidate = usageCandidate(ctx.conv.json);
    const now = new Date();
    const choice = chooseUsage(previous, candidate, now.getTime());
    if (!choice.follow) {
      // A side request: the line keeps showing the conversation the developer is in, and the operator sees why.
      obs.metrics.usageSideRequests.inc({ kind: choice.kind });
      return;
    }
    // The upstream's own prompt count of what was forwarded is exact; without one, guardian's count stands.
    const reported = observed.promptTokens;
    const used = reported ?? d.tokensAfter;
    await this.memo.putUsage({
      session: ctx.session.hash,
      ...(ctx.session.ownerHash === undefined ? {} : { owner: ctx.session.ownerHash }),
      window: ctx.window.window,
      used_after_compaction: used,
      pct: Math.round((used / ctx.window.window) * 1000) / 10,
      count_source: reported !== undefined ? 'tokenize' : ctx.count.source,
      model,
      last_compaction_at: d.compactedAt ?? previous?.last_compaction_at ?? null,
      at: now.toISOString(),
      tools: candidate.tools,
    });
  }
}
