import { Injectable } from '@nestjs/common';

import { GuardianMetrics, logOnce, type FailOpenStage, type Route } from '@guardian/telemetry';

import { GuardianState } from '../state/guardian-state';
import { GuardianLogger } from './guardian-logger';

/**
 * The one place the request path reports through: counters for /guardian/stats, Prometheus metrics, events and
 * logs. A fail-open is a designed path (CONTRACTS §2): counted by stage, an event, and ONE log line per
 * (stage, reason) so a failing summariser does not flood the log.
 */
@Injectable()
export class Observability {
  constructor(
    readonly state: GuardianState,
    readonly metrics: GuardianMetrics,
    readonly logger: GuardianLogger,
  ) {}

  failOpen(
    stage: FailOpenStage,
    reason: string,
    ctx: { route: Route; model?: string; reqId?: string; err?: unknown },
  ): void {
    this.state.failOpen[stage] += 1;
    this.metrics.failOpen.inc({ stage });
    this.state.emit({ kind: 'fail_open', route: ctx.route, model: ctx.model, stage, reason });
    const err =
      ctx.err instanceof Error ? ctx.err.message : typeof ctx.err === 'string' ? ctx.err : undefined;
    logOnce(
      this.logger,
      `fail_open:${stage}:${reason}`,
      { stage, reason, route: ctx.route, reqId: ctx.reqId, err },
      'compaction failed open: the request goes upstream unchanged (logged once per stage and reason)',
    );
  }
}
