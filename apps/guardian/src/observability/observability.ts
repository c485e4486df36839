import { Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';

import { GuardianMetrics, logOnce, type FailOpenStage, type Route } from '@guardian/telemetry';

import { GuardianConfig } from '../config/guardian-config';
import { GuardianRuntime } from '../config/guardian-runtime';
import { GuardianState } from '../state/guardian-state';
import { GuardianLogger } from './guardian-logger';
import { SealMonitor } from './seal-monitor';

/**
 * The one place the request path reports through: counters for /guardian/stats, Prometheus metrics, events and
 * logs. A fail-open is a designed path (CONTRACTS §2): counted by stage, an event, and ONE log line per
 * (stage, reason) so a failing summariser does not flood the log. It also owns the background seal check that
 * sets `seal_status` and `guardian_archive_seal_ok` (never on the request path).
 */
@Injectable()
export class Observability implements OnApplicationBootstrap, OnModuleDestroy {
  readonly seal: SealMonitor;

  constructor(
    readonly state: GuardianState,
    readonly metrics: GuardianMetrics,
    readonly logger: GuardianLogger,
    config: GuardianConfig,
    runtime: GuardianRuntime,
  ) {
    this.seal = new SealMonitor({
      spanDir: config.paths.spanDir,
      anchorDir: config.paths.anchorDir,
      replica: runtime.replica,
      state,
      metrics,
      logger,
    });
  }

  onApplicationBootstrap(): void {
    this.seal.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.seal.stop();
  }

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
