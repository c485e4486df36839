export { ARCHIVE_API_LIMITS } from './api-limits';
export type {
  CaptureAnswer,
  CaptureRequest,
  DigestsAnswer,
  EventsAnswer,
  HandoffAnswer,
  HeadsAnswer,
  ReadAnswer,
  ReadyAnswer,
  ReceiptsAnswer,
  RunsAnswer,
  SavingsAnswer,
  SealAnswer,
  SearchAnswer,
  SpansAnswer,
  StatsAnswer,
  StatsSession,
  UsageAnswer,
} from './api-types';
export type {
  HistoryAnswer,
  HistoryBucket,
  SessionAnswer,
  SessionCompaction,
  SessionListEntry,
  SessionsAnswer,
  UsageFigures,
  UsageModelFigures,
  UsagePeriod,
  UsageSummaryAnswer,
} from './console-answers';
export { GuardianClient, GuardianClientError } from './guardian-client';
export { RemoteArchive } from './remote-archive';
export { sidecarTarget } from './sidecar-target';
