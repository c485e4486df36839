import { Injectable } from '@nestjs/common';

import { GuardianMetrics } from '@guardian/telemetry';

import { FailOpen } from '../../observability/fail-open';
import { GuardianState } from '../../state/guardian-state';
import type { IgnoredReason, PrepareInput } from '../handoff';

/** What the request stage reports: how a request was read, and the reads that failed open. */
@Injectable()
export class RequestReporter {
  constructor(
    private readonly metrics: GuardianMetrics,
    private readonly state: GuardianState,
    private readonly failOpen: FailOpen,
  ) {}

  /** Forwarded on its size proof alone (ADR 0013). */
  passedBySize(): void {
    this.state.countPassthroughBySize();
  }

  /** A sent X-Guardian-Session that could not be used (ARCHITECTURE.md#sessions). */
  sessionHeaderIgnored(reason: IgnoredReason): void {
    this.metrics.sessionHeaderIgnored.inc({ reason });
  }

  /** The fast path threw: the request goes the full path instead. */
  fastPathFailed(input: PrepareInput, err: unknown): void {
    this.failOpen.report('internal', 'fast_path_exception', { route: input.route, reqId: input.reqId, err });
  }

  /** The count (window, /tokenize) failed: the client's bytes are forwarded (ARCHITECTURE.md#fail-open rule 1). */
  countFailed(input: PrepareInput, model: string, err: unknown): void {
    this.failOpen.report('count', 'count_failed', { route: input.route, model, reqId: input.reqId, err });
  }
}
