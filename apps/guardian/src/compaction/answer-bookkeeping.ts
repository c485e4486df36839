import { Injectable } from '@nestjs/common';

import { RECALL_TOOL_NAMES } from '@guardian/compaction';
import { MemoStore } from '@guardian/memo';

import type { OwnedRoute } from '../formats/owned-route';
import { Observability } from '../observability/observability';
import { CaptureService } from './capture.service';
import type { Decision, RequestContext } from './compaction-context';
import type { ObservedAnswer } from '../formats/format-adapter';
import { RequestCounter, type CountSource } from './request-counter';
import { SessionTable } from './session-table';
import { SpanRecorder } from './span-recorder';
import { chooseUsage, usageCandidate, type UsageCandidate } from './usage-selection';

/** What the bookkeeping of one answer needs to know about its request, however the request was decided. */
export interface AnswerFacts {
  sessionHash: string;
  /** Team mode: the owner hash of the token that sent the request. */
  ownerHash?: string;
  model: string;
  route: OwnedRoute;
  window: number;
  countSource: CountSource;
  candidate: UsageCandidate;
  /** The request's items, for the capture journal (only the full path has them; the fast path skips capture). */
  items?: unknown[];
  /** A sent session header that was not used: answered as an X-Guardian-Warning. */
  ignoredWarning?: { warning: string };
}

/** The facts of a parsed and measured request. */
export function factsOf(ctx: RequestContext): AnswerFacts {
  const facts: AnswerFacts = {
    sessionHash: ctx.session.hash,
    model: ctx.conv.model,
    route: ctx.conv.route,
    window: ctx.window.window,
    countSource: ctx.count.source,
    candidate: usageCandidate(ctx.conv.json),
    items: ctx.conv.items,
  };
  if (ctx.session.ownerHash !== undefined) facts.ownerHash = ctx.session.ownerHash;
  return facts;
}

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

  async record(facts: AnswerFacts, d: Decision, observed: ObservedAnswer): Promise<void> {
    const obs = this.obs;
    const model = facts.model;
    if (observed.promptTokens !== undefined && d.rawForwarded > 0)
      this.counter.observe(model, observed.promptTokens, d.rawForwarded);
    for (const name of observed.toolNames) {
      if (!RECALL_TOOL_NAMES.has(name)) continue;
      obs.metrics.recallToolCalls.inc({ tool: name });
      await this.recorder.recallToolCall(facts.ownerHash);
    }
    if (facts.items)
      this.capture.record({
        sessionHash: facts.sessionHash,
        ownerHash: facts.ownerHash,
        route: facts.route,
        messages: facts.items,
      });
    this.sessions.touch(facts.sessionHash, d.compactedAt);
    obs.metrics.activeSessions.set(this.sessions.size);
    const previous = await this.memo.getUsage(facts.sessionHash);
    const candidate = facts.candidate;
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
      session: facts.sessionHash,
      ...(facts.ownerHash === undefined ? {} : { owner: facts.ownerHash }),
      window: facts.window,
      used_after_compaction: used,
      pct: Math.round((used / facts.window) * 1000) / 10,
      count_source: reported !== undefined ? 'tokenize' : facts.countSource,
      model,
      last_compaction_at: d.compactedAt ?? previous?.last_compaction_at ?? null,
      at: now.toISOString(),
      tools: candidate.tools,
    });
  }
}
