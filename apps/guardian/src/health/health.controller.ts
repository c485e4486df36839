import { Controller, Get, Header, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';

import type { ReadyAnswer } from '@guardian/client';
import { MemoStore, RedisMemoStore } from '@guardian/memo';

import { GuardianConfig } from '../config/guardian-config';
import { ServingState } from '../http/serving-state';
import { GuardianState } from '../state/guardian-state';
import { SpanVolumeProbe } from './span-volume-probe';

/**
 * Kubernetes probes. `/readyz` is ready once config is loaded and the server listens (it cannot answer before);
 * the span volume, Redis and the upstream are reported, never gating (ARCHITECTURE.md#fail-open rule 2): a full
 * volume or a Redis outage must not take replicas out of the Service, since guardian fails open around both.
 * Once SIGTERM has come, `/readyz` answers 503 `draining` while requests are still served, so the Service and any
 * load balancer stop sending here before the listener closes (docs/RELIABILITY.md#shutdown); `/healthz` stays 200, or
 * the kubelet would restart a pod that is only shutting down. The body is the client's {@link ReadyAnswer}, so the doctor
 * and the sidecar cannot drift apart.
 */
@Controller()
export class HealthController {
  constructor(
    private readonly config: GuardianConfig,
    private readonly state: GuardianState,
    private readonly memo: MemoStore,
    private readonly volume: SpanVolumeProbe,
    private readonly serving: ServingState,
  ) {}

  @Get('healthz')
  @Header('cache-control', 'no-store')
  healthz(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('readyz')
  @Header('cache-control', 'no-store')
  async readyz(@Res({ passthrough: true }) reply: FastifyReply): Promise<ReadyAnswer> {
    const draining = this.serving.draining;
    if (draining) void reply.status(503);
    // 'ready', 'connecting' or 'down' when GUARDIAN_REDIS_URL is set: reported, never gating
    // (ARCHITECTURE.md#fail-open rule 2).
    const redis = this.memo instanceof RedisMemoStore ? this.memo.status() : 'not configured';
    return {
      status: draining ? 'draining' : 'ready',
      version: this.config.version,
      span_volume: await this.volume.check(),
      memo_store: this.memo.kind,
      redis,
      upstream: this.state.upstreamStatus,
    };
  }
}
