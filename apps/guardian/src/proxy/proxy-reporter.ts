import { Injectable } from '@nestjs/common';

import { GuardianMetrics, type RequestOutcome, type Route } from '@guardian/telemetry';

import { GuardianLogger } from '../observability/guardian-logger';

/** What the proxy reports of requests compaction does not follow: refusals at the door, unowned paths, failures. */
@Injectable()
export class ProxyReporter {
  constructor(
    private readonly metrics: GuardianMetrics,
    readonly logger: GuardianLogger,
  ) {}

  /** A request refused at the door (team mode, a required session header, a path outside the upstream). */
  refused(route: Route): void {
    this.metrics.requests.inc({ route, outcome: 'refused' });
  }

  /** A request guardian answered itself at the door: a compaction a provider's protocol asked for. */
  served(route: Route): void {
    this.metrics.requests.inc({ route, outcome: 'served' });
  }

  /** A request on a path guardian does not own, answered or failed. */
  unowned(outcome: Extract<RequestOutcome, 'passthrough' | 'upstream_error'>): void {
    this.metrics.requests.inc({ route: 'other', outcome });
  }
}
