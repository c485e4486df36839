export {
  ARCHIVE_FAILURE_REASONS,
  COMPACTING_ROUTES,
  COMPACTION_REASONS,
  FAIL_OPEN_STAGES,
  GUARDIAN_METRIC_NAMES,
  GuardianMetrics,
  MEMO_OPS,
  MEMO_RESULTS,
  MEMO_STORES,
  PRECOMPACT_OUTCOMES,
  RECALL_TOOL_LABELS,
  RECOVERY_OUTCOMES,
  REQUEST_OUTCOMES,
  ROUTES,
  SESSION_HEADER_IGNORED_REASONS,
  SUMMARISER_OUTCOMES,
  USAGE_SIDE_KINDS,
  TOKEN_RELOAD_OUTCOMES,
  ACCESS_REFUSAL_REASONS,
} from './metrics';
export type {
  ArchiveFailureReason,
  PrecompactOutcome,
  CompactionReason,
  FailOpenStage,
  GuardianMetricsOptions,
  MemoOp,
  MemoStoreKind,
  RequestOutcome,
  Route,
  SummariserOutcome,
  TokenReloadOutcome,
  AccessRefusalReason,
} from './metrics';
export { genAiAttributes, startOtelSdk, tracer, withOpenSpan, withSpan } from './tracing';
export type { GenAiFacts, OtelEnv, OtelHandle, SpanAttributeValues } from './tracing';
export { REDACT_PATHS, createLogger, logOnce } from './logger';
export type { LoggerOptions } from './logger';
export { packageVersion } from './package-version';
