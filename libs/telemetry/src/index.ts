export { createLogger, logOnce } from './logger';
export {
  FAIL_OPEN_STAGES,
  GUARDIAN_METRIC_NAMES,
  GuardianMetrics,
  MEMO_OPS,
  type AccessRefusalReason,
  type FailOpenStage,
  type PrecompactOutcome,
  type Route,
} from './metrics';
export { packageVersion } from './package-version';
export { genAiAttributes, startOtelSdk, withOpenSpan, withSpan } from './tracing';
