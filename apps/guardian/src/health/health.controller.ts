import { Controller, Get, Header } from '@nestjs/common';

import { MemoStore, RedisMemoStore } from '@guardian/memo';

import { GuardianConfig } from '../config/guardian-config';
import { GuardianState } from '../state/guardian-state';
import { SpanVolumeProbe } from './span-volume-probe';

/**
 * Kubernetes probes. `/readyz` is ready once config is loaded and the server listens (it cannot answer before);
 * the span volume, Redis and the upstream are reported, never gating (ARCHITECTURE.md#fail-open rule 2): a full
 * volume or a Redis outage must not take replicas out of the Service, since guardian fails open around both.
 */
@Controller()
export class HealthController {
  constructor(
    private readonly config: GuardianConfig,
    private readonly state: GuardianState,
    private readonly memo: MemoStore,
    private readonly volume: SpanVolumeProbe,
  ) {}

  @Get('healthz')
  @Header('cache-control', 'no-store')
  healthz(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('readyz')
  @Header('cache-control', 'no-store')
  async readyz(): Promise<Record<string, unknown>> {
    // 'ready', 'connecting' or 'down' when GUARDIAN_REDIS_URL is set: reported, never gating
    // (ARCHITECTURE.md#fail-open rule 2).
    const redis = this.memo instanceof RedisMemoStore ? this.memo.status() : 'not configured';
    return {
      status: 'ready',
      version: this.config.version,
      span_volume: await this.volume.check(),
      memo_store: this.memo.kind,
      redis,
      upstream: this.state.upstreamStatus,
    };
  }
}
