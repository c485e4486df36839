export { ArchiveError, type ArchiveErrorCode } from './archive-error';
export { assertRunId, resolveGuardianPaths, spanFileName, type GuardianPaths } from './archive-paths';
export { listRuns, listSpans, runSessionName } from './archive-reader';
export {
  allRuns,
  allSpans,
  sealAll,
  type ArchiveSource,
  type DigestsRequest,
  type PageRequest,
  type ReadSpanRequest,
  type RunsPage,
  type SealReport,
  type SealRequest,
  type SearchRequest,
  type SpansPage,
} from './archive-source';
export { ArchiveWriter, type SpanInput, type SpanRef } from './archive-writer';
export { sha256Hex } from './canonical-json';
export { CaptureJournal } from './capture-journal';
export { CAPTURE_ROUTE, archivedLineBytes, captureEnd, captureRuns } from './capture-runs';
export type { ChainHead } from './chain-reader';
export { CompactionLog, type CompactionLogInput } from './compaction-log';
export { isoTimestamp } from './iso-time';
export { readDailyLogs } from './jsonl';
export { LocalArchive } from './local-archive';
export { pruneRuns, reindex, repairRun, sealExisting } from './maintenance';
export { OWNER_PATTERN, ownerHash, sessionHash } from './owners';
export { Receipts } from './receipts';
export type { DigestList, ReadSpanResult } from './recall-read';
export { replicaTag } from './replica-tag';
export type { SealedHead } from './run-writer';
export { parseAge, type ReceiptsSummary, type SavingsSummary } from './savings';
export { SealedArchive, type SealedArchiveOptions } from './sealed-archive';
export { searchArchive, type SearchResult } from './search';
export {
  UsageLog,
  UsageLogLineSchema,
  addUsageRow,
  emptyUsageTotals,
  spendUsd,
  type TokenPrices,
  type UsageLogInput,
  type UsageLogRow,
} from './usage-log';
export type { ChainBreak } from './chain-break';
export { verifyArchive, verifyRun, type RunVerdict } from './verify';
export { verifyIncrement, type VerifyCursor } from './verify-increment';

// The archive as a transparency log (issue 29, docs/ARCHIVE_FORMAT.md#the-log).
export { LogProofs } from './log-proofs';
export { pinnedLogsGone } from './log-coverage';
export { verifyLogs, verifyOneLog, type LogVerdict, type PinOptions } from './log-verify';
export { parseVerifierKey } from './signed-note';
export { CHECKPOINT_FILE, SpanLog, VKEY_FILE } from './span-log';
export { listLogs, logFolder, peekCheckpoint, readLogFile, type LogSource } from './span-log-read';
export { openSpan, parseSpanRef, type OpenedSpan } from './span-open';
export { spanEntry, verifyTlogProof } from './tlog-checkpoint';
export { parseTilePath, tilePath } from './tlog-tiles';
export { writerLog } from './writer-log';
export { sharedLogsSupported } from './writer-lock';
