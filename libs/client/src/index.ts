export type {
  CaptureAnswer,
  CaptureRequest,
  DigestsAnswer,
  ErrorAnswer,
  EventAnswer,
  EventsAnswer,
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
export {
  GuardianClient,
  GuardianClientError,
  type ClientErrorCode,
  type GuardianClientOptions,
  type Query,
  type RawReply,
} from './guardian-client';
export { RemoteArchive } from './remote-archive';
export { sidecarTarget, type SidecarTarget } from './sidecar-target';
export { ARCHIVE_API_LIMITS } from './api-limits';
