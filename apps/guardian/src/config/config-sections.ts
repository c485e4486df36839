import type { GuardianEnv } from '@guardian/config';

// The typed sections of the sidecar's configuration (ARCHITECTURE.md#configuration), built once from the parsed
// environment. A service keeps the section it needs and reads no GUARDIAN_* name itself, so a variable's meaning is
// decided here, in one place.

/** Window, budget, counting and what a rebuilt request may carry. */
export interface CompactionSection {
  /** GUARDIAN_NUM_CTX: the fixed window, or undefined to detect it per model. */
  window: number | undefined;
  threshold: number;
  reserveOutput: number;
  keepRecent: { fraction: number; messages: number | undefined; headroomTurns: number };
  charsPerToken: number;
  countTools: boolean;
  calibrate: boolean;
  tokenizeTimeoutMs: number;
  pinMaxChars: number;
  ledgerMaxChars: number;
  /** GUARDIAN_RECALL_MAX_CHARS: the stale-recall block's cap (0: off). */
  recallMaxChars: number;
  /** GUARDIAN_ANCHOR_MAX_CHARS: the carried identifiers' cap (0: off). */
  anchorMaxChars: number;
  /** GUARDIAN_STATED_MAX_CHARS: the stated values' cap (0: off). */
  statedMaxChars: number;
  /** GUARDIAN_CLEAR_TOOL_RESULTS: over budget, clear old tool results before summarising (issue 32 item 3). */
  clearToolResults: boolean;
  /** GUARDIAN_HANDOFF: a hand-off file is written beside the session's run at each compaction. */
  handoff: boolean;
  dryRun: boolean;
  /** Sessions (and their calibration, runs, capture journals) kept in memory. */
  maxSessions: number;
}

/** Summariser calls, the summary memo and background pre-compaction. */
export interface SummariserSection {
  timeoutMs: number;
  minSummaryChars: number;
  minTranscriptChars: number;
  toolArgChars: number;
  reasoningEffort: string | undefined;
  /** GUARDIAN_SUMMARY_MEMO: summaries are memoized and reused. */
  memo: boolean;
  precompact: { threshold: number; concurrency: number };
}

/** Where the memo lives when it is shared (Redis), and how long a replica waits on another's summary. */
export interface MemoSection {
  redisUrl: string | undefined;
  redisPrefix: string;
  ttlSeconds: number;
  redisTimeoutMs: number;
  lockWaitMs: number;
}

/** The archive the sidecar writes. Folders are in GuardianConfig.paths. */
export interface ArchiveSection {
  keepSpans: number;
  capture: 'off' | 'journal';
  /** Each writer's transparency log (issue 29): GUARDIAN_LOG_ORIGIN, GUARDIAN_LOG_KEY_FILE. */
  log: { originPrefix: string | undefined; keyFile: string | undefined };
  /** GUARDIAN_COST_PER_1M_INPUT_USD: the price the console shows the kept-out tokens at (0 leaves money out). */
  costPer1MInputUsd: number;
  /** GUARDIAN_COST_PER_1M_OUTPUT_USD: the price of the tokens the model writes (completion and summary tokens). */
  costPer1MOutputUsd: number;
}

/** The providers' compaction protocols (issue 27, docs/native-compaction.md). */
export interface NativeSection {
  mode: 'auto' | 'emulate' | 'passthrough';
  /** A mounted key (a Kubernetes Secret); undefined: made on the data volume at first start. */
  keyFile: string | undefined;
}

/** The listening edge and the upstream connection. */
export interface ProxySection {
  host: string;
  port: number;
  maxBodyBytes: number;
  upstreamTimeoutSeconds: number;
  connectTimeoutSeconds: number;
  sessionHeaderRequired: boolean;
  /** A streamed request guardian itself keeps waiting gets keep-alive bytes after this long, then on this period; 0: never. */
  keepAliveMs: number;
}

/**
 * Shutdown after SIGTERM (docs/RELIABILITY.md#shutdown): everything is served for `drainMs` while /readyz says 503,
 * then the listener closes and what is in flight may finish until `graceMs` after the signal.
 */
export interface ShutdownSection {
  drainMs: number;
  graceMs: number;
}

/** Tokens for guardian's own endpoints (ARCHITECTURE.md#access). */
export interface AccessSection {
  adminToken: string | undefined;
  tokensFile: string | undefined;
  tokenRequired: boolean;
}

export interface ConfigSections {
  compaction: CompactionSection;
  summariser: SummariserSection;
  memo: MemoSection;
  archive: ArchiveSection;
  proxy: ProxySection;
  shutdown: ShutdownSection;
  access: AccessSection;
  native: NativeSection;
}

export function sectionsOf(env: GuardianEnv): ConfigSections {
  return {
    native: { mode: env.GUARDIAN_NATIVE_COMPACTION, keyFile: env.GUARDIAN_NATIVE_KEY_FILE },
    compaction: {
      window: env.GUARDIAN_NUM_CTX,
      threshold: env.GUARDIAN_COMPACT_THRESHOLD,
      reserveOutput: env.GUARDIAN_RESERVE_OUTPUT,
      keepRecent: {
        fraction: env.GUARDIAN_KEEP_RECENT_FRACTION,
        messages: env.GUARDIAN_KEEP_RECENT_MESSAGES,
        headroomTurns: env.GUARDIAN_CUT_HEADROOM_TURNS,
      },
      charsPerToken: env.GUARDIAN_CHARS_PER_TOKEN,
      countTools: env.GUARDIAN_COUNT_TOOLS,
      calibrate: env.GUARDIAN_CALIBRATE,
      tokenizeTimeoutMs: env.GUARDIAN_TOKENIZE_TIMEOUT_MS,
      pinMaxChars: env.GUARDIAN_PIN_MAX_CHARS,
      ledgerMaxChars: env.GUARDIAN_LEDGER_MAX_CHARS,
      recallMaxChars: env.GUARDIAN_RECALL_MAX_CHARS,
      anchorMaxChars: env.GUARDIAN_ANCHOR_MAX_CHARS,
      statedMaxChars: env.GUARDIAN_STATED_MAX_CHARS,
      clearToolResults: env.GUARDIAN_CLEAR_TOOL_RESULTS,
      handoff: env.GUARDIAN_HANDOFF,
      dryRun: env.GUARDIAN_DRY_RUN,
      maxSessions: env.GUARDIAN_MAX_SESSIONS,
    },
    summariser: {
      timeoutMs: env.GUARDIAN_SUMMARY_TIMEOUT_MS,
      minSummaryChars: env.GUARDIAN_MIN_SUMMARY_CHARS,
      minTranscriptChars: env.GUARDIAN_MIN_TRANSCRIPT_CHARS,
      toolArgChars: env.GUARDIAN_TOOL_ARG_CHARS,
      reasoningEffort: env.GUARDIAN_SUMMARY_REASONING_EFFORT,
      memo: env.GUARDIAN_SUMMARY_MEMO,
      precompact: {
        threshold: env.GUARDIAN_PRECOMPACT_THRESHOLD,
        concurrency: env.GUARDIAN_PRECOMPACT_CONCURRENCY,
      },
    },
    memo: {
      redisUrl: env.GUARDIAN_REDIS_URL,
      redisPrefix: env.GUARDIAN_REDIS_PREFIX,
      ttlSeconds: env.GUARDIAN_MEMO_TTL,
      redisTimeoutMs: env.GUARDIAN_REDIS_TIMEOUT_MS,
      lockWaitMs: env.GUARDIAN_MEMO_LOCK_WAIT_MS,
    },
    archive: {
      keepSpans: env.GUARDIAN_KEEP_SPANS,
      capture: env.GUARDIAN_CAPTURE,
      log: { originPrefix: env.GUARDIAN_LOG_ORIGIN, keyFile: env.GUARDIAN_LOG_KEY_FILE },
      costPer1MInputUsd: env.GUARDIAN_COST_PER_1M_INPUT_USD,
      costPer1MOutputUsd: env.GUARDIAN_COST_PER_1M_OUTPUT_USD,
    },
    proxy: {
      host: env.GUARDIAN_HOST,
      port: env.GUARDIAN_PORT,
      maxBodyBytes: env.GUARDIAN_MAX_BODY_BYTES,
      upstreamTimeoutSeconds: env.GUARDIAN_UPSTREAM_TIMEOUT,
      connectTimeoutSeconds: env.GUARDIAN_UPSTREAM_CONNECT_TIMEOUT,
      sessionHeaderRequired: env.GUARDIAN_SESSION_HEADER_REQUIRED,
      keepAliveMs: env.GUARDIAN_KEEPALIVE_MS,
    },
    shutdown: {
      // The drain is part of the grace: a drain as long as the grace would leave nothing in flight any time to end.
      drainMs: Math.min(env.GUARDIAN_SHUTDOWN_DRAIN_SECONDS, env.GUARDIAN_SHUTDOWN_GRACE_SECONDS) * 1000,
      graceMs: env.GUARDIAN_SHUTDOWN_GRACE_SECONDS * 1000,
    },
    access: {
      adminToken: env.GUARDIAN_ADMIN_TOKEN,
      tokensFile: env.GUARDIAN_TOKENS_FILE,
      tokenRequired: env.GUARDIAN_TOKEN_REQUIRED,
    },
  };
}
