import { Injectable, type OnModuleInit } from '@nestjs/common';

import {
  ownerHash,
  readDailyLogs,
  runSessionName,
  UsageLogLineSchema,
  type TokenPrices,
  type UsageLogRow,
} from '@guardian/archive';
import { LruMap } from '@guardian/collections';
import { GuardianMetrics, logOnce, type UsageSample } from '@guardian/telemetry';

import type { Viewer } from '../access/access-policy';
import { TokenRegistry } from '../access/token-registry';
import { GuardianConfig } from '../config/guardian-config';
import { GuardianLogger } from '../observability/guardian-logger';
import { ConsoleLogLine, usageFigures, type ConsoleLogRow } from './console-figures';

const DAY_MS = 86_400_000;
/** Runs whose run.json name is remembered: a run.json is written once, so what it names never changes. */
const NAMED_RUNS = 1000;

/**
 * The console's one source (ADR 0025): the compaction log on the volume, the lines `recall --savings` adds up, read
 * when a page (or a Prometheus scrape) asks and scoped to the caller. Nothing is copied into a second store, so the
 * chart, the sessions and the usage survive a restart and agree with the CLI by construction.
 */
@Injectable()
export class ConsoleLog implements OnModuleInit {
  private readonly runNames = new LruMap<string, string | null>(NAMED_RUNS);

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

  /** The viewer's usage log lines since `since` (tokens in and out, summariser tokens), scoped like `rows`. */
  async usageRows(viewer: Viewer, since: Date): Promise<UsageLogRow[]> {
    const { rows } = await readDailyLogs(this.config.paths.usageDir, since, UsageLogLineSchema);
    if (viewer.kind === 'all') return rows;
    return rows.filter((r) => r.owner_hash === viewer.ownerHash);
  }

  /**
   * The names sessions were sent with, from the run.json of each one's newest run (ADR 0025, amended): what the
   * console shows when the memo has no record of the session (a restart without Redis). Only sessions the viewer's
   * log lines name are asked for, and a run.json counts only when it names the same session and owner.
   */
  async sessionNames(
    sessions: readonly { id: string; run: string | null; ownerHash: string | null }[],
  ): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    await Promise.all(
      sessions.map(async ({ id, run, ownerHash: owner }) => {
        if (run === null) return;
        const key = `${run}\n${id}\n${owner ?? ''}`;
        let name = this.runNames.get(key);
        if (name === undefined) {
          try {
            name = await runSessionName(this.config.paths.spanDir, run, {
              sessionHash: id,
              ownerHash: owner,
            });
          } catch (err) {
            // Safe to go on: a name is a label; the session is listed by its hash, and asked for again next time.
            logOnce(
              this.logger,
              'session_name_read',
              { err },
              'a run.json could not be read for a session name',
            );
            return;
          }
          this.runNames.set(key, name);
        }
        if (name !== null) out.set(id, name);
      }),
    );
    return out;
  }

  /** The configured prices (GUARDIAN_COST_PER_1M_INPUT_USD, GUARDIAN_COST_PER_1M_OUTPUT_USD). */
  prices(): TokenPrices {
    const { archive } = this.config;
    return { inputPer1M: archive.costPer1MInputUsd, outputPer1M: archive.costPer1MOutputUsd };
  }

  /** Owner names by owner hash, from the tokens file now in use (the log keeps hashes only). */
  ownerNames(): Map<string, string> {
    return new Map(this.tokens.ownerNames().map((name) => [ownerHash(name), name]));
  }

  /** The usage gauges' samples: the whole sidecar's, per period (no owner or model label, see UsageSample). */
  private async usageSamples(): Promise<UsageSample[]> {
    let rows: ConsoleLogRow[];
    let usage: UsageLogRow[];
    try {
      const since = new Date(Date.now() - 7 * DAY_MS);
      [rows, usage] = await Promise.all([
        this.rows({ kind: 'all' }, since),
        this.usageRows({ kind: 'all' }, since),
      ]);
    } catch (err) {
      // A scrape must not fail for the volume: the gauges go without series until the logs can be read again.
      logOnce(
        this.logger,
        'usage_read',
        { err },
        'the compaction or usage log could not be read for the usage gauges',
      );
      return [];
    }
    return (['24h', '7d'] as const).map((period) => {
      const since = new Date(Date.now() - (period === '24h' ? DAY_MS : 7 * DAY_MS));
      const { total } = usageFigures(rows, usage, since, this.prices());
      return {
        period,
        sent: total.tokens_before,
        forwarded: total.tokens_after,
        kept_out: total.tokens_kept_out,
        in: total.tokens_in,
        out: total.tokens_out,
        summariser_in: total.summariser_tokens_in,
        summariser_out: total.summariser_tokens_out,
        compactions: total.compactions,
        answers: total.answers,
        cost_usd: total.cost_usd,
      };
    });
  }
}
