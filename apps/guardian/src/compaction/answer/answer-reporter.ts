import { Injectable } from '@nestjs/common';

import {
  GuardianMetrics,
  logOnce,
  type PrecompactOutcome,
  type RequestOutcome,
  type Route,
} from '@guardian/telemetry';

import { FailOpen } from '../../observability/fail-open';
import { GuardianLogger } from '../../observability/guardian-logger';
import { GuardianState } from '../../state/guardian-state';
import type { OwnedRoute } from '../../formats/owned-route';
import type { AnswerFacts } from '../handoff';

/**
 * What the answer stage reports: each answered request (its outcome, time to first byte, duration and guardian's
 * own overhead), what the bookkeeping behind it saw, and the background pre-compactions.
 */
@Injectable()
export class AnswerReporter {
  constructor(
    private readonly metrics: GuardianMetrics,
    private readonly state: GuardianState,
    private readonly failOpen: FailOpen,
    private readonly logger: GuardianLogger,
  ) {}

  firstByte(route: OwnedRoute, seconds: number): void {
    this.metrics.upstreamTtfb.observe({ route }, seconds);
  }

  /** An owned request's answer ended (or failed). */
  answered(
    route: OwnedRoute,
    outcome: RequestOutcome,
    timing: { seconds: number; overheadSeconds: number },
  ): void {
    this.metrics.requests.inc({ route, outcome });
    this.metrics.upstreamDuration.observe({ route }, timing.seconds);
    this.metrics.overhead.observe({ route }, timing.overheadSeconds);
    this.state.setUpstreamStatus(outcome === 'upstream_error' ? 'down' : 'ok');
  }

  /**
   * The backend answered with a prompt count well under what was forwarded (UsageSample): counted per model, and an
   * event naming both counts and the window now believed.
   */
  backendTruncation(facts: AnswerFacts, counts: { reported: number; forwarded: number }): void {
    this.metrics.backendTruncations.inc({ model: this.metrics.modelLabel(facts.model) });
    this.state.emit({
      kind: 'backend_truncation',
      route: facts.route,
      model: facts.model,
      session: facts.sessionHash.slice(0, 8),
      owner_hash: facts.ownerHash ?? null,
      reported_tokens: counts.reported,
      forwarded_tokens: counts.forwarded,
      learned_window: counts.reported,
    });
    logOnce(
      this.logger,
      `backend_truncation:${this.metrics.modelLabel(facts.model)}`,
      { route: facts.route, model: facts.model, reported: counts.reported, forwarded: counts.forwarded },
      'the backend reported far fewer prompt tokens than were forwarded: it truncated the prompt without saying so; ' +
        'its window is taken to be the reported count and later requests are compacted to fit (logged once per model)',
    );
  }

  recallToolCall(tool: string): void {
    this.metrics.recallToolCalls.inc({ tool });
  }

  activeSessions(count: number): void {
    this.metrics.activeSessions.set(count);
  }

  /** A side request kept out of the session's usage (ADR 0010). */
  usageSideRequest(kind: 'probe' | 'helper' | 'subagent'): void {
    this.metrics.usageSideRequests.inc({ kind });
  }

  /** Work that goes on behind the answer (GuardianState.behind). */
  behind(work: Promise<unknown>): void {
    this.state.trackBehind(work);
  }

  /** A write behind the answer failed (the usage record, the capture journal): the request is not affected. */
  behindFailed(
    stage: 'memo' | 'archive',
    reason: 'usage_write' | 'journal_write',
    route: Route,
    err: unknown,
  ): void {
    this.failOpen.report(stage, reason, { route, err });
  }

  precompact(outcome: PrecompactOutcome): void {
    this.metrics.precompact.inc({ outcome });
  }

  precompactRunning(jobs: number): void {
    this.state.setPrecompactRunning(jobs);
  }

  precompactFailed(code: string, route: OwnedRoute, err: unknown): void {
    logOnce(
      this.logger,
      `precompact_failed:${code}`,
      { code, route, err },
      'background pre-compaction failed; the next compacting turn summarises in the foreground (logged once per reason)',
    );
  }
}
