import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type MetricValue } from 'prom-client';

// Every metric the sidecar exports is defined in this one file (HOUSE rule 10): prefix `guardian_`, counters
// end in `_total`, histograms carry their unit, and label values come from the closed sets below, never from
// session ids, users or message text (issue 6 item 3).

/** Routes a request can take; `guardian` is the sidecar's own endpoints. */
export const ROUTES = ['chat', 'messages', 'responses', 'other', 'guardian'] as const;
/** The routes guardian reads and may compact; only these reach the compaction and upstream-timing metrics. */
export const COMPACTING_ROUTES = ['chat', 'messages', 'responses'] as const;
/** The routes of the proxied paths (everything but guardian's own endpoints). */
export const PROXIED_ROUTES = [...COMPACTING_ROUTES, 'other'] as const;
/** How a request ended, from the client's point of view. */
export const REQUEST_OUTCOMES = [
  'passthrough',
  'compacted',
  'reused',
  'spilled',
  'fail_open',
  'refused',
  'upstream_error',
  'dry_run',
  // answered by guardian itself: its own endpoints (/guardian/*, probes, /metrics), and a compaction a provider's
  // protocol asked for (docs/native-compaction.md)
  'served',
] as const;
/** Why a compaction ran: the budget was crossed, or the upstream rejected an overflow. */
export const COMPACTION_REASONS = ['budget', 'overflow'] as const;
/** Where a fail-open happened (ARCHITECTURE.md#fail-open rule 1). */
export const FAIL_OPEN_STAGES = [
  'parse',
  'count',
  'window',
  'plan',
  'memo',
  'summarise',
  'archive',
  'rebuild',
  'recovery',
  'internal',
] as const;
export const SUMMARISER_OUTCOMES = ['ok', 'error', 'short'] as const;
export const MEMO_STORES = ['memory', 'redis'] as const;
export const MEMO_RESULTS = ['hit', 'miss'] as const;
export const MEMO_OPS = ['get', 'set', 'lock', 'unlock', 'delete'] as const;
export const ARCHIVE_FAILURE_REASONS = ['no_space', 'read_only', 'permission', 'other'] as const;
export const RECOVERY_OUTCOMES = ['ok', 'failed'] as const;
/**
 * What a background pre-compaction did: `done` stored a summary, `used` is a foreground request that reused one,
 * `not_needed` found nothing to evict yet, `not_ahead` found that the next turn's cut evicts the answer to this
 * request (only that turn can summarise it: ADR 0021), `busy` was skipped (one per session,
 * GUARDIAN_PRECOMPACT_CONCURRENCY in all), `failed` and `abandoned` (the session moved past it, or the process
 * stopped) changed nothing for clients.
 */
export const PRECOMPACT_OUTCOMES = [
  'done',
  'used',
  'not_needed',
  'not_ahead',
  'busy',
  'failed',
  'abandoned',
] as const;
/** Why an X-Guardian-Session header was ignored: nothing in it, two different values, over 256 bytes. */
export const SESSION_HEADER_IGNORED_REASONS = ['empty', 'repeated', 'too_long'] as const;
/** Requests kept out of a session's usage (ADR 0010): token-count probes, helper requests and sub-agents' requests. */
export const USAGE_SIDE_KINDS = ['probe', 'helper', 'subagent'] as const;
/** How a reload of GUARDIAN_TOKENS_FILE ended; on `invalid` and `unreadable` the last good tokens stay in use. */
export const TOKEN_RELOAD_OUTCOMES = ['loaded', 'invalid', 'unreadable'] as const;
/**
 * The recall MCP server's tool names, as `guardian_recall_tool_calls_total` counts them. The list itself lives in
 * `@guardian/compaction` (RECALL_TOOLS), which this lib may not import; test/observability checks the two agree.
 */
export const RECALL_TOOL_LABELS = [
  'search_spans',
  'read_span',
  'list_spans',
  'list_digests',
  'get_seal_status',
  'get_proxy_status',
  'get_context_status',
] as const;
/** The compaction protocol families `auto` probes the upstream for (docs/native-compaction.md). */
export const NATIVE_FAMILIES = ['responses', 'messages'] as const;
/** What a probe proved: the upstream serves the protocol, does not, or nothing (then guardian emulates and asks again). */
export const NATIVE_PROBE_VERDICTS = ['serves', 'absent', 'inconclusive'] as const;
/**
 * The providers' compaction protocols guardian serves for a backend that has none (docs/native-compaction.md), by
 * entry point: OpenAI Responses' `/v1/responses/compact`, a trailing `compaction_trigger` and `context_management`
 * compaction; Anthropic's on-demand compaction, threshold compaction (`compact_20260112`) and context editing.
 */
export const NATIVE_ENTRIES = [
  'responses_compact',
  'responses_trigger',
  'responses_threshold',
  'messages_on_demand',
  'messages_threshold',
  'clear_tool_uses',
  'clear_thinking',
] as const;
/** What one native entry point did: `applied` (compacted, or an edit changed the request), `not_needed`, `refused`. */
export const NATIVE_OUTCOMES = ['applied', 'not_needed', 'refused'] as const;
/** The routes that speak a compaction protocol. */
export const NATIVE_ROUTES = ['messages', 'responses'] as const;
/**
 * What became of a compaction handle a client sent back: expanded from the memo, from the readable text of an
 * Anthropic block it seals, rebuilt from the sealed span it names (the memo had lost it), `lost` (neither: the block
 * names the span only), or refused: `invalid` (does not verify) or `foreign` (another developer's, team mode).
 */
export const NATIVE_HANDLE_OUTCOMES = ['memo', 'block', 'rebuilt', 'lost', 'invalid', 'foreign'] as const;
/**
 * Why a summariser's answer was refused as not a summary: no `## Must Keep` section, a transcript line no real turn
 * holds, larger than what it replaces. The guardian app's `SummaryRefusal` is checked against this list at compile time.
 */
export const SUMMARY_REFUSAL_REASONS = ['no_must_keep', 'invented_line', 'too_large'] as const;
/** Why guardian refused a request at the door in team mode (ARCHITECTURE.md#access). */
export const ACCESS_REFUSAL_REASONS = ['token_required', 'token_invalid'] as const;
/**
 * What `guardian_usage_tokens` counts: the tokens clients sent into compacted requests, what guardian forwarded of
 * them, and their difference (the compaction log); the backend's own prompt (`in`) and completion (`out`) tokens over
 * every answered request, and the summariser's (the usage log).
 */
const USAGE_TOKEN_KINDS = [
  'sent',
  'forwarded',
  'kept_out',
  'in',
  'out',
  'summariser_in',
  'summariser_out',
] as const;

/**
 * The sidecar's usage over one period, from the compaction log (the console's figures). No owner and no model label:
 * `/metrics` is open and names no owner (docs/team.md), and model names are the clients'; per developer and model
 * is `/guardian/usage/summary`, behind the token.
 */
export interface UsageSample {
  /** The console's two periods. */
  period: '24h' | '7d';
  sent: number;
  forwarded: number;
  kept_out: number;
  in: number;
  out: number;
  summariser_in: number;
  summariser_out: number;
  compactions: number;
  /** Answered requests (the usage log). */
  answers: number;
  /** The spend at the configured prices (0 when none is set). */
  cost_usd: number;
}

/**
 * Distinct `model` label values a metric takes before the rest are counted as `other`: a model name is the
 * client's to choose (a llama.cpp server answers under any name), and label values must stay bounded (HOUSE rule 10).
 */
export const MAX_MODEL_LABELS = 32;

export type Route = (typeof ROUTES)[number];
export type NativeProbeVerdict = (typeof NATIVE_PROBE_VERDICTS)[number];
export type RequestOutcome = (typeof REQUEST_OUTCOMES)[number];
export type FailOpenStage = (typeof FAIL_OPEN_STAGES)[number];
export type PrecompactOutcome = (typeof PRECOMPACT_OUTCOMES)[number];
export type AccessRefusalReason = (typeof ACCESS_REFUSAL_REASONS)[number];
export type NativeEntry = (typeof NATIVE_ENTRIES)[number];
export type NativeOutcome = (typeof NATIVE_OUTCOMES)[number];
export type NativeRoute = (typeof NATIVE_ROUTES)[number];
export type NativeHandleOutcome = (typeof NATIVE_HANDLE_OUTCOMES)[number];
export type SummaryRefusalReason = (typeof SUMMARY_REFUSAL_REASONS)[number];

const NAMES = {
  requests: 'guardian_requests_total',
  compactions: 'guardian_compactions_total',
  failOpen: 'guardian_fail_open_total',
  tokensBefore: 'guardian_compaction_input_tokens',
  tokensAfter: 'guardian_compaction_output_tokens',
  summariserDuration: 'guardian_summariser_duration_seconds',
  overhead: 'guardian_overhead_duration_seconds',
  upstreamDuration: 'guardian_upstream_duration_seconds',
  upstreamTtfb: 'guardian_upstream_ttfb_seconds',
  memoLookups: 'guardian_memo_lookups_total',
  memoErrors: 'guardian_memo_errors_total',
  archiveWriteDuration: 'guardian_archive_write_duration_seconds',
  archiveWriteFailures: 'guardian_archive_write_failures_total',
  archiveDeferred: 'guardian_archive_deferred_total',
  sealOk: 'guardian_archive_seal_ok',
  activeSessions: 'guardian_active_sessions',
  pinsCarried: 'guardian_pins_carried',
  compactionsWithPins: 'guardian_compactions_with_pins_total',
  staleRecalls: 'guardian_stale_recalls_total',
  toolResultsCleared: 'guardian_tool_results_cleared_total',
  staleRecallExcerpts: 'guardian_stale_recall_excerpts_total',
  oversizedSpills: 'guardian_oversized_spills_total',
  summariesReused: 'guardian_summaries_reused_total',
  summariesChunked: 'guardian_summaries_chunked_total',
  // Not `summary_...`: promtool's linter refuses metric names that contain a metric type.
  summaryRetries: 'guardian_summariser_retries_total',
  summariesRefused: 'guardian_summaries_refused_total',
  overflowRecoveries: 'guardian_overflow_recoveries_total',
  backendTruncations: 'guardian_backend_truncation_total',
  sessionHeaderIgnored: 'guardian_session_header_ignored_total',
  usageSideRequests: 'guardian_usage_side_requests_total',
  recallToolCalls: 'guardian_recall_tool_calls_total',
  precompact: 'guardian_precompact_total',
  summariserCircuitOpened: 'guardian_summariser_circuit_opened_total',
  summariserCircuitsOpen: 'guardian_summariser_circuits_open',
  // Not `summary_...`: promtool's linter refuses metric names that contain a metric type.
  summaryWait: 'guardian_summariser_wait_seconds',
  tokensReloads: 'guardian_tokens_reloads_total',
  tokensLoaded: 'guardian_tokens_loaded',
  accessRefusals: 'guardian_access_refusals_total',
  websocketRefusals: 'guardian_websocket_upgrades_refused_total',
  nativeProbes: 'guardian_native_probes_total',
  nativeRequests: 'guardian_native_requests_total',
  nativeHandles: 'guardian_native_handles_total',
  usageTokens: 'guardian_usage_tokens',
  usageCompactions: 'guardian_usage_compactions',
  usageAnswers: 'guardian_usage_answers',
  usageCost: 'guardian_usage_cost_usd',
  buildInfo: 'guardian_build_info',
} as const;

/** Every metric name the app exports (histograms add `_bucket`, `_sum` and `_count` series). */
export const GUARDIAN_METRIC_NAMES: readonly string[] = Object.freeze(Object.values(NAMES));

// Token buckets from 1k to 256k: windows in the wild run from 4k (small local models) to 256k.
const TOKEN_BUCKETS = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144];
// Guardian's own time is sub-millisecond on a passthrough, so the buckets start at 0.1 ms.
const OVERHEAD_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
];
// A summariser call on a local model can take tens of seconds (ARCHITECTURE.md#fail-open rule 4).
const SUMMARISER_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120];
// GUARDIAN_UPSTREAM_TIMEOUT defaults to 600 s, so the top bucket reaches it.
const UPSTREAM_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const TTFB_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const ARCHIVE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export interface GuardianMetricsOptions {
  /** Also collect the Node.js process metrics (prefixed `guardian_`). Default false. */
  defaultMetrics?: boolean;
  /** Value of the `version` label on `guardian_build_info`. Default `unknown`. */
  version?: string;
}

/**
 * The sidecar's metrics, on a Registry of its own (never prom-client's global one, so two apps in one
 * process, or two tests, never collide). Serve `registry.metrics()` with `registry.contentType`.
 */
export class GuardianMetrics {
  readonly registry = new Registry();

  readonly requests = this.counter(NAMES.requests, 'Requests handled, by route and outcome.', [
    'route',
    'outcome',
  ]);
  readonly compactions = this.counter(NAMES.compactions, 'Compactions performed, by route and reason.', [
    'route',
    'reason',
  ]);
  readonly failOpen = this.counter(
    NAMES.failOpen,
    'Requests forwarded unchanged after a failure, by stage.',
    ['stage'],
  );
  readonly tokensBefore = this.histogram(NAMES.tokensBefore, 'Request tokens before a compaction.', {
    labelNames: ['route'],
    buckets: TOKEN_BUCKETS,
  });
  readonly tokensAfter = this.histogram(NAMES.tokensAfter, 'Request tokens after a compaction.', {
    labelNames: ['route'],
    buckets: TOKEN_BUCKETS,
  });
  readonly summariserDuration = this.histogram(NAMES.summariserDuration, 'Summariser call duration.', {
    labelNames: ['outcome'],
    buckets: SUMMARISER_BUCKETS,
  });
  readonly overhead = this.histogram(
    NAMES.overhead,
    "Guardian's own time per request, excluding time spent waiting on the upstream.",
    { labelNames: ['route'], buckets: OVERHEAD_BUCKETS },
  );
  readonly upstreamDuration = this.histogram(NAMES.upstreamDuration, 'Upstream request duration.', {
    labelNames: ['route'],
    buckets: UPSTREAM_BUCKETS,
  });
  readonly upstreamTtfb = this.histogram(
    NAMES.upstreamTtfb,
    'Time to the first byte of the upstream response.',
    {
      labelNames: ['route'],
      buckets: TTFB_BUCKETS,
    },
  );
  readonly memoLookups = this.counter(NAMES.memoLookups, 'Summary memo lookups, by store and result.', [
    'store',
    'result',
  ]);
  readonly memoErrors = this.counter(
    NAMES.memoErrors,
    'Memo store errors (each one failed open), by operation.',
    ['op'],
  );
  readonly archiveWriteDuration = this.histogram(NAMES.archiveWriteDuration, 'Span write duration.', {
    labelNames: [],
    buckets: ARCHIVE_BUCKETS,
  });
  readonly archiveWriteFailures = this.counter(
    NAMES.archiveWriteFailures,
    'Span writes that failed, by reason.',
    ['reason'],
  );
  readonly archiveDeferred = this.counter(
    NAMES.archiveDeferred,
    'Evictions forwarded whose span could not be written yet (ARCHITECTURE.md#fail-open rule 3).',
    [],
  );
  readonly sealOk = this.gauge(
    NAMES.sealOk,
    '1 unless the latest archive verify found a broken hash chain.',
    [],
  );
  readonly activeSessions = this.gauge(NAMES.activeSessions, 'Sessions held in memory.', []);
  readonly pinsCarried = this.gauge(NAMES.pinsCarried, 'Pins carried by the most recent compaction.', []);
  readonly compactionsWithPins = this.counter(
    NAMES.compactionsWithPins,
    'Compactions that carried pins.',
    [],
  );
  readonly toolResultsCleared = this.counter(
    NAMES.toolResultsCleared,
    'Old tool results replaced by a pointer to their archived span instead of a summary (issue 32 item 3).',
    ['route'],
  );
  readonly staleRecalls = this.counter(
    NAMES.staleRecalls,
    'Compacted requests that got a stale-recall block (issue 32 item 2).',
    ['route'],
  );
  readonly staleRecallExcerpts = this.counter(
    NAMES.staleRecallExcerpts,
    'Verbatim excerpts of evicted messages that stale-recall blocks carried.',
    ['route'],
  );
  readonly oversizedSpills = this.counter(
    NAMES.oversizedSpills,
    'Oversized messages spilled to the archive.',
    ['route'],
  );
  readonly summariesReused = this.counter(
    NAMES.summariesReused,
    'Compactions that reused a memoized summary.',
    [],
  );
  readonly summariesChunked = this.counter(
    NAMES.summariesChunked,
    'Summaries built from several chunk calls.',
    [],
  );
  readonly summaryRetries = this.counter(
    NAMES.summaryRetries,
    'Summariser retries after a too-short or refused summary.',
    [],
  );
  readonly summariesRefused = this.counter(
    NAMES.summariesRefused,
    'Summariser answers refused as not a summary (no Must Keep section, an invented transcript line, too large), by reason.',
    ['reason'],
  );
  readonly overflowRecoveries = this.counter(
    NAMES.overflowRecoveries,
    'Upstream overflow rejections retried after compaction, by outcome.',
    ['route', 'outcome'],
  );
  private readonly modelLabels = new Set<string>();
  readonly backendTruncations = this.counter(
    NAMES.backendTruncations,
    'Answers whose reported prompt tokens were well under what guardian forwarded: the backend cut the prompt ' +
      'without saying so (issue 28 item 5); the model label is bounded (MAX_MODEL_LABELS, then "other").',
    ['model'],
  );
  readonly sessionHeaderIgnored = this.counter(
    NAMES.sessionHeaderIgnored,
    'X-Guardian-Session headers ignored (the derived key was used), by reason (ARCHITECTURE.md#sessions, docs/sessions.md).',
    ['reason'],
  );
  readonly usageSideRequests = this.counter(
    NAMES.usageSideRequests,
    "Answered requests that left their session's usage as it was (ADR 0010), by kind.",
    ['kind'],
  );
  readonly recallToolCalls = this.counter(NAMES.recallToolCalls, 'Recall tool calls, by tool name.', [
    'tool',
  ]);
  readonly precompact = this.counter(
    NAMES.precompact,
    'Background pre-compactions, by outcome (used: a client request reused a pre-computed summary).',
    ['outcome'],
  );
  readonly summariserCircuitOpened = this.counter(
    NAMES.summariserCircuitOpened,
    'Times the summariser circuit breaker opened for a model after summaries kept failing.',
    [],
  );
  readonly summariserCircuitsOpen = this.gauge(
    NAMES.summariserCircuitsOpen,
    'Models whose summariser breaker is open (checkpoints stand in), as of its last change.',
    [],
  );
  readonly summaryWait = this.histogram(
    NAMES.summaryWait,
    'Time a compacted client request spent getting its summary (near 0 on a memo hit).',
    { labelNames: [], buckets: [0.001, ...SUMMARISER_BUCKETS] },
  );
  readonly tokensReloads = this.counter(
    NAMES.tokensReloads,
    'Reloads of GUARDIAN_TOKENS_FILE after it changed, by outcome (invalid or unreadable: the last good set stays).',
    ['outcome'],
  );
  readonly tokensLoaded = this.gauge(
    NAMES.tokensLoaded,
    'Developer tokens in use, from GUARDIAN_TOKENS_FILE (0 without one).',
    [],
  );
  readonly accessRefusals = this.counter(
    NAMES.accessRefusals,
    'Requests refused for their X-Guardian-Token (missing where one is required, or not accepted), by reason.',
    ['reason'],
  );
  readonly websocketRefusals = this.counter(
    NAMES.websocketRefusals,
    'WebSocket upgrade requests answered 426 so the client falls back to HTTP (Codex tries one first), by route.',
    ['route'],
  );
  readonly nativeProbes = this.counter(
    NAMES.nativeProbes,
    'Probes of the upstream for the compaction protocols (GUARDIAN_NATIVE_COMPACTION=auto), by family and verdict.',
    ['family', 'verdict'],
  );
  readonly nativeRequests = this.counter(
    NAMES.nativeRequests,
    "Requests that spoke a provider's compaction protocol guardian serves (docs/native-compaction.md), by entry point and outcome.",
    ['entry', 'outcome'],
  );
  readonly nativeHandles = this.counter(
    NAMES.nativeHandles,
    'Compaction handles sent back in a conversation, by route and what became of them (rebuilt: from the sealed span).',
    ['route', 'outcome'],
  );
  /** Where the usage gauges read from at a scrape (the app's compaction log); unset, they have no series. */
  private usageSource: (() => Promise<UsageSample[]>) | undefined;
  /** One read of the log serves both usage gauges of one scrape (prom-client collects them together). */
  private usageRead: Promise<UsageSample[]> | undefined;
  readonly usageTokens = new Gauge<'period' | 'kind'>({
    name: NAMES.usageTokens,
    help: 'Tokens over the last 24h and 7d, what recall --savings adds up: sent, forwarded and kept out by compaction (the compaction log); the backend-reported in and out of answered requests, and of summariser calls (the usage log).',
    labelNames: ['period', 'kind'],
    registers: [this.registry],
    collect: async () => {
      const samples = await this.usageSamples();
      this.usageTokens.reset();
      for (const u of samples)
        for (const kind of USAGE_TOKEN_KINDS) this.usageTokens.set({ period: u.period, kind }, u[kind]);
    },
  });
  readonly usageCompactions = new Gauge<'period'>({
    name: NAMES.usageCompactions,
    help: 'Compactions over the last 24h and 7d, from the compaction log (what recall --savings counts).',
    labelNames: ['period'],
    registers: [this.registry],
    collect: async () => {
      const samples = await this.usageSamples();
      this.usageCompactions.reset();
      for (const u of samples) this.usageCompactions.set({ period: u.period }, u.compactions);
    },
  });
  readonly usageAnswers = new Gauge<'period'>({
    name: NAMES.usageAnswers,
    help: 'Answered requests over the last 24h and 7d, from the usage log (what recall --savings counts as answered).',
    labelNames: ['period'],
    registers: [this.registry],
    collect: async () => {
      const samples = await this.usageSamples();
      this.usageAnswers.reset();
      for (const u of samples) this.usageAnswers.set({ period: u.period }, u.answers);
    },
  });
  readonly usageCost = new Gauge<'period'>({
    name: NAMES.usageCost,
    help: 'Spend over the last 24h and 7d at GUARDIAN_COST_PER_1M_INPUT_USD and GUARDIAN_COST_PER_1M_OUTPUT_USD (0 without prices).',
    labelNames: ['period'],
    registers: [this.registry],
    collect: async () => {
      const samples = await this.usageSamples();
      this.usageCost.reset();
      for (const u of samples) this.usageCost.set({ period: u.period }, u.cost_usd);
    },
  });
  readonly buildInfo = this.gauge(NAMES.buildInfo, 'Always 1; the version label names the running build.', [
    'version',
  ]);

  constructor(opts: GuardianMetricsOptions = {}) {
    if (opts.defaultMetrics === true) {
      collectDefaultMetrics({ register: this.registry, prefix: 'guardian_' });
      // prom-client names three gauges `_total`, which `promtool check metrics` rejects; the same counts
      // stay available, by type, as guardian_nodejs_active_{handles,requests,resources}.
      for (const kind of ['handles', 'requests', 'resources']) {
        this.registry.removeSingleMetric(`guardian_nodejs_active_${kind}_total`);
      }
    }
    this.buildInfo.set({ version: opts.version ?? 'unknown' }, 1);
    // Until a verify finds a break the chain is taken as sound; a 0 at boot would page someone for nothing.
    this.sealOk.set(1);
    this.preInitialise();
  }

  /**
   * The `model` label value for a model name: the name itself for the first {@link MAX_MODEL_LABELS} distinct names,
   * `other` for the rest, so a client cycling names cannot grow the registry.
   */
  modelLabel(model: string): string {
    if (this.modelLabels.has(model)) return model;
    if (this.modelLabels.size >= MAX_MODEL_LABELS || model === 'other') return 'other';
    this.modelLabels.add(model);
    return model;
  }

  /**
   * The sum of a metric's series whose labels include `labels`; for a histogram, how many observations it has.
   * `/guardian/stats` reads its counters here, so each count is kept once, in the registry (issue 18).
   */
  async total<L extends string>(
    metric: Counter<L> | Gauge<L> | Histogram<L>,
    labels: Partial<Record<L, string>> = {},
  ): Promise<number> {
    const values: (MetricValue<L> & { metricName?: string })[] = (await metric.get()).values;
    const wanted = Object.entries(labels);
    return (
      values
        // A histogram's series are its buckets, `_sum` and `_count`; a counter's and a gauge's carry no metricName.
        .filter((v) => v.metricName === undefined || v.metricName.endsWith('_count'))
        .filter((v) => wanted.every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want))
        .reduce((n, v) => n + v.value, 0)
    );
  }

  // Every series whose labels come from a closed set is created at 0, so `/metrics` shows it before the first
  // event and `increase()`/`rate()` see the first one: a series born at its first value has no earlier sample to
  // compare, and the dashboard's "Tokens kept out" read 0 on a fresh pod (issue 30 item 3; Prometheus docs,
  // "Avoid missing metrics"). Left out: `version` on guardian_build_info (one value, set above), `model` on
  // guardian_backend_truncation_total (the clients' names, bounded at run time), and the usage gauges, which are set
  // afresh from the logs at each scrape (a gauge is read as it stands, never through increase()).
  private preInitialise(): void {
    for (const stage of FAIL_OPEN_STAGES) this.failOpen.inc({ stage }, 0);
    for (const route of ROUTES) {
      for (const outcome of REQUEST_OUTCOMES) this.requests.inc({ route, outcome }, 0);
    }
    for (const route of COMPACTING_ROUTES) {
      for (const reason of COMPACTION_REASONS) this.compactions.inc({ route, reason }, 0);
      this.oversizedSpills.inc({ route }, 0);
      this.toolResultsCleared.inc({ route }, 0);
      this.staleRecalls.inc({ route }, 0);
      this.staleRecallExcerpts.inc({ route }, 0);
      for (const outcome of RECOVERY_OUTCOMES) this.overflowRecoveries.inc({ route, outcome }, 0);
      for (const histogram of [
        this.tokensBefore,
        this.tokensAfter,
        this.overhead,
        this.upstreamDuration,
        this.upstreamTtfb,
      ])
        histogram.zero({ route });
    }
    for (const store of MEMO_STORES) {
      for (const result of MEMO_RESULTS) this.memoLookups.inc({ store, result }, 0);
    }
    for (const op of MEMO_OPS) this.memoErrors.inc({ op }, 0);
    for (const reason of ARCHIVE_FAILURE_REASONS) this.archiveWriteFailures.inc({ reason }, 0);
    for (const outcome of SUMMARISER_OUTCOMES) this.summariserDuration.zero({ outcome });
    for (const reason of SUMMARY_REFUSAL_REASONS) this.summariesRefused.inc({ reason }, 0);
    for (const outcome of PRECOMPACT_OUTCOMES) this.precompact.inc({ outcome }, 0);
    for (const reason of SESSION_HEADER_IGNORED_REASONS) this.sessionHeaderIgnored.inc({ reason }, 0);
    for (const kind of USAGE_SIDE_KINDS) this.usageSideRequests.inc({ kind }, 0);
    for (const tool of RECALL_TOOL_LABELS) this.recallToolCalls.inc({ tool }, 0);
    for (const outcome of TOKEN_RELOAD_OUTCOMES) this.tokensReloads.inc({ outcome }, 0);
    for (const reason of ACCESS_REFUSAL_REASONS) this.accessRefusals.inc({ reason }, 0);
    for (const route of PROXIED_ROUTES) this.websocketRefusals.inc({ route }, 0);
    for (const family of NATIVE_FAMILIES)
      for (const verdict of NATIVE_PROBE_VERDICTS) this.nativeProbes.inc({ family, verdict }, 0);
    for (const entry of NATIVE_ENTRIES) {
      for (const outcome of NATIVE_OUTCOMES) this.nativeRequests.inc({ entry, outcome }, 0);
    }
    for (const route of NATIVE_ROUTES) {
      for (const outcome of NATIVE_HANDLE_OUTCOMES) this.nativeHandles.inc({ route, outcome }, 0);
    }
  }

  /** The app hands in how to read usage once it can (the compaction log lives on the app's volume). */
  readUsageFrom(source: () => Promise<UsageSample[]>): void {
    this.usageSource = source;
  }

  private usageSamples(): Promise<UsageSample[]> {
    const source = this.usageSource;
    if (source === undefined) return Promise.resolve([]);
    this.usageRead ??= source().finally(() => (this.usageRead = undefined));
    return this.usageRead;
  }

  private counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
    return new Counter<L>({ name, help, labelNames, registers: [this.registry] });
  }

  private gauge<L extends string>(name: string, help: string, labelNames: readonly L[]): Gauge<L> {
    return new Gauge<L>({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram<L extends string>(
    name: string,
    help: string,
    opts: { labelNames: readonly L[]; buckets: number[] },
  ): Histogram<L> {
    return new Histogram<L>({ name, help, ...opts, registers: [this.registry] });
  }
}
