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

  recallToolCall(tool: string): void {
    this.metrics.recallToolCalls.inc({ tool });
  }

  activeSessions(count: number): void {
    this.metrics.activeSessions.set(count);
  }

  /** A side request kept out of the session's usage (ADR 0010). */
  usageSideRequest(kind: 'probe' | 'helper'): void {
    this.metrics.usageSideRequests.inc({ kind });
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
