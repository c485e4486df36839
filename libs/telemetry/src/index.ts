export { createLogger, logOnce } from './logger';
export {
  FAIL_OPEN_STAGES,
  GUARDIAN_METRIC_NAMES,
  GuardianMetrics,
  MEMO_OPS,
  RECALL_TOOL_LABELS,
  type AccessRefusalReason,
  type FailOpenStage,
  type NativeEntry,
  type NativeHandleOutcome,
  type NativeOutcome,
  type NativeRoute,
  type NativeProbeVerdict,
  type PrecompactOutcome,
  type RequestOutcome,
  type Route,
  type SummaryRefusalReason,
  type UsageSample,
} from './metrics';
export { packageVersion } from './package-version';
export { genAiAttributes, startOtelSdk, withOpenSpan, withSpan } from './tracing';
