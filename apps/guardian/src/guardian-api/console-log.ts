import { Injectable, type OnModuleInit } from '@nestjs/common';

import { ownerHash, readDailyLogs } from '@guardian/archive';
import { GuardianMetrics, logOnce, type UsageSample } from '@guardian/telemetry';

import type { Viewer } from '../access/access-policy';
import { TokenRegistry } from '../access/token-registry';
import { GuardianConfig } from '../config/guardian-config';
import { GuardianLogger } from '../observability/guardian-logger';
import { ConsoleLogLine, usageFigures, type ConsoleLogRow } from './console-figures';

const DAY_MS = 86_400_000;

/**
 * The console's one source (ADR 0025): the compaction log on the volume, the lines `recall --savings` adds up, read
 * when a page (or a Prometheus scrape) asks and scoped to the caller. Nothing is copied into a second store, so the
 * chart, the sessions and the usage survive a restart and agree with the CLI by construction.
 */
@Injectable()
export class ConsoleLog implements OnModuleInit {
  constructor(
    private readonly config: GuardianConfig,
    private readonly tokens: TokenRegistry,
    private readonly metrics: GuardianMetrics,
    private readonly logger: GuardianLogger,
  ) {}

  onModuleInit(): void {
    this.metrics.readUsageFrom(() => this.usageSamples());
  }

  /** The viewer's log lines since `since`: a developer's own, the admin's (or an open sidecar's) every line. */
  async rows(viewer: Viewer, since: Date): Promise<ConsoleLogRow[]> {
    const { rows } = await readDailyLogs(this.config.paths.logDir, since, ConsoleLogLine);
    if (viewer.kind === 'all') return rows;
    return rows.filter((r) => r.owner_hash === viewer.ownerHash);
  }

  /** Owner names by owner hash, from the tokens file now in use (the log keeps hashes only). */
  ownerNames(): Map<string, string> {
    return new Map(this.tokens.ownerNames().map((name) => [ownerHash(name), name]));
  }

  /** The usage gauges' samples: the whole sidecar's, per period (no owner or model label, see UsageSample). */
  private async usageSamples(): Promise<UsageSample[]> {
    let rows: ConsoleLogRow[];
    try {
      rows = await this.rows({ kind: 'all' }, new Date(Date.now() - 7 * DAY_MS));
    } catch (err) {
      // A scrape must not fail for the volume: the gauges go without series until the log can be read again.
      logOnce(
        this.logger,
        'usage_read',
        { err },
        'the compaction log could not be read for the usage gauges',
      );
      return [];
    }
    return (['24h', '7d'] as const).map((period) => {
      const since = new Date(Date.now() - (period === '24h' ? DAY_MS : 7 * DAY_MS));
      const { total } = usageFigures(rows, since, 0);
      return {
        period,
        sent: total.tokens_before,
        forwarded: total.tokens_after,
        kept_out: total.tokens_kept_out,
        compactions: total.compactions,
      };
    });
  }
}
