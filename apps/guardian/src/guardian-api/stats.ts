import type { StatsAnswer, StatsSession } from '@guardian/client';
import type { UsageRecord } from '@guardian/memo';
import { FAIL_OPEN_STAGES, type GuardianMetrics } from '@guardian/telemetry';

import type { GuardianConfig } from '../config/guardian-config';
import type { GuardianState } from '../state/guardian-state';

/**
 * The `/guardian/stats` body: at least the keys ARCHITECTURE.md#http-surface lists, plus what the dashboard draws. No
 * message text. A count that has a Prometheus series is read from the registry, so stats and /metrics cannot differ.
 * Typed with the client's {@link StatsAnswer}: a field added here and not there (or the other way) does not compile.
 */
export async function buildStats(args: {
  config: GuardianConfig;
  state: GuardianState;
  metrics: GuardianMetrics;
  replica: string;
  memoStore: string;
  /** Team mode: whose sessions `sessions` lists (a developer's dashboard), null for everyone's. */
  owner: string | null;
  sessions: UsageRecord[];
  budgetFor: (window: number) => number;
}): Promise<StatsAnswer> {
  const { config, state, metrics } = args;
  const total = metrics.total.bind(metrics);
  const failOpen = await Promise.all(
    FAIL_OPEN_STAGES.map(async (stage) => [stage, await total(metrics.failOpen, { stage })] as const),
  );
  const precompact = {
    done: await total(metrics.precompact, { outcome: 'done' }),
    used: await total(metrics.precompact, { outcome: 'used' }),
    failed: await total(metrics.precompact, { outcome: 'failed' }),
    running: state.precompactRunning,
  };
  const { compaction } = config;
  const last = state.lastModel ? state.windows.peek(state.lastModel) : undefined;
  const window = last?.window ?? compaction.window ?? null;
  return {
    version: config.version,
    upstream: config.upstream.shown,
    replica: args.replica,
    started_at: state.startedAt,
    num_ctx: window,
    window_source: last?.source ?? (compaction.window ? 'env' : 'detected per model'),
    windows: Object.fromEntries(
      [...state.windows.entries()].map(([model, w]) => [model, { window: w.window, source: w.source }]),
    ),
    effective_input_budget: window === null ? null : args.budgetFor(window),
    compactions_performed: await total(metrics.compactions),
    summaries_reused: await total(metrics.summariesReused),
    summaries_chunked: await total(metrics.summariesChunked),
    summary_retries: await total(metrics.summaryRetries),
    summary_checkpoints: state.summaryCheckpoints,
    // One observation per summariser call, whatever its outcome.
    summariser_calls: await total(metrics.summariserDuration),
    precompact: {
      ...precompact,
      // Stored in the background but not (yet) reused by a client request: the conversation moved on or changed.
      wasted: Math.max(0, precompact.done - precompact.used),
    },
    summary_waits: state.summaryWaits,
    behind: state.behind,
    // A model whose summaries keep failing is not asked for a while (issue 20); checkpoints stand in meanwhile.
    summariser_circuits: Object.fromEntries(
      [...state.summariserCircuits].map(([model, c]) => [
        model,
        {
          state: c.openUntil === 0 ? 'closed' : c.openUntil > Date.now() ? 'open' : 'half_open',
          failures: c.failures,
          retry_at: c.openUntil > 0 ? new Date(c.openUntil).toISOString() : null,
        },
      ]),
    ),
    summary_wait_seconds: Math.round(state.summaryWaitSeconds * 1000) / 1000,
    oversized_spills: await total(metrics.oversizedSpills),
    compactions_with_pins: await total(metrics.compactionsWithPins),
    last_pins_carried: await total(metrics.pinsCarried),
    fail_open: Object.fromEntries(failOpen),
    archive_deferred: await total(metrics.archiveDeferred),
    overflow_recovered: await total(metrics.overflowRecoveries, { outcome: 'ok' }),
    backend_truncations: await total(metrics.backendTruncations),
    tokens_kept_out: state.tokensKeptOut,
    // Requests whose size alone proved they fit: forwarded unchanged without being parsed (ADR 0013).
    passthrough_by_size: state.passthroughBySize,
    dry_run: compaction.dryRun,
    keep_recent:
      compaction.keepRecent.messages !== undefined
        ? { messages: compaction.keepRecent.messages }
        : { fraction: compaction.keepRecent.fraction },
    memo_store: args.memoStore,
    upstream_status: state.upstreamStatus,
    sessions_of: args.owner,
    seal_status: state.sealStatus,
    seal_checked_at: state.sealCheckedAt,
    sessions: args.sessions.map((s): StatsSession => ({
      session: s.session.slice(0, 8),
      name: s.name ?? null,
      // The model name is the client's to choose; the stats body stays small whatever it sent.
      model: s.model.length > 256 ? `${s.model.slice(0, 256)}…` : s.model,
      window: s.window,
      used: s.used_after_compaction,
      pct: s.pct,
      count_source: s.count_source,
      session_source: s.session_source ?? null,
      at: s.at,
    })),
  };
}
