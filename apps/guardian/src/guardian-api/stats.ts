import type { UsageRecord } from '@guardian/memo';

import type { GuardianConfig } from '../config/guardian-config';
import type { GuardianState } from '../state/guardian-state';

/**
 * The `/guardian/stats` body: at least the keys ARCHITECTURE.md#http-surface lists, plus what the dashboard draws. No
 * message text.
 */
export function buildStats(args: {
  config: GuardianConfig;
  state: GuardianState;
  replica: string;
  memoStore: string;
  /** Team mode: whose sessions `sessions` lists (a developer's dashboard), null for everyone's. */
  owner: string | null;
  sessions: UsageRecord[];
  budgetFor: (window: number) => number;
}): Record<string, unknown> {
  const { config, state } = args;
  const env = config.env;
  const last = state.lastModel ? state.windows.get(state.lastModel) : undefined;
  const window = last?.window ?? env.GUARDIAN_NUM_CTX ?? null;
  return {
    version: config.version,
    upstream: config.upstream.shown,
    replica: args.replica,
    started_at: state.startedAt,
    num_ctx: window,
    window_source: last?.source ?? (env.GUARDIAN_NUM_CTX ? 'env' : 'detected per model'),
    windows: Object.fromEntries(
      [...state.windows].map(([model, w]) => [model, { window: w.window, source: w.source }]),
    ),
    effective_input_budget: window === null ? null : args.budgetFor(window),
    compactions_performed: state.compactionsPerformed,
    summaries_reused: state.summariesReused,
    summaries_chunked: state.summariesChunked,
    summary_retries: state.summaryRetries,
    summary_checkpoints: state.summaryCheckpoints,
    summariser_calls: state.summariserCalls,
    precompact: {
      ...state.precompact,
      // Stored in the background but not (yet) reused by a client request: the conversation moved on or changed.
      wasted: Math.max(0, state.precompact.done - state.precompact.used),
    },
    summary_waits: state.summaryWaits,
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
    oversized_spills: state.oversizedSpills,
    compactions_with_pins: state.compactionsWithPins,
    last_pins_carried: state.lastPinsCarried,
    fail_open: { ...state.failOpen },
    archive_deferred: state.archiveDeferred,
    overflow_recovered: state.overflowRecovered,
    tokens_kept_out: state.tokensKeptOut,
    dry_run: env.GUARDIAN_DRY_RUN,
    keep_recent:
      env.GUARDIAN_KEEP_RECENT_MESSAGES !== undefined
        ? { messages: env.GUARDIAN_KEEP_RECENT_MESSAGES }
        : { fraction: env.GUARDIAN_KEEP_RECENT_FRACTION },
    memo_store: args.memoStore,
    upstream_status: state.upstreamStatus,
    sessions_of: args.owner,
    seal_status: state.sealStatus,
    seal_checked_at: state.sealCheckedAt,
    sessions: args.sessions.map((s) => ({
      session: s.session.slice(0, 8),
      // The model name is the client's to choose; the stats body stays small whatever it sent.
      model: s.model.length > 256 ? `${s.model.slice(0, 256)}…` : s.model,
      window: s.window,
      used: s.used_after_compaction,
      pct: s.pct,
      count_source: s.count_source,
      at: s.at,
    })),
  };
}
