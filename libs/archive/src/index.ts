export { ArchiveWriter, type SpanInput, type SpanKind, type SpanRef } from './archive-writer';
export { ArchiveError, type ArchiveErrorCode } from './archive-error';
export {
  assertRunId,
  assertSpanNumber,
  resolveGuardianPaths,
  spanFileName,
  type GuardianPaths,
} from './archive-paths';
export { canonicalJson, sha256Hex, type JsonValue } from './canonical-json';
export {
  SealedArchive,
  type ArchiveWarning,
  type PlacedSpan,
  type SealedArchiveOptions,
  type SealedHead,
} from './sealed-archive';
export { CaptureJournal, type CaptureJournalOptions } from './capture-journal';
export { CompactionLog, type CompactionLogInput, type CompactionLogLine } from './compaction-log';
export { Receipts, type ReceiptCounts } from './receipts';
export { replicaTag } from './replica-tag';
export { listRuns, listSpans, type RunSummary, type SpanListing } from './archive-reader';
export {
  listDigests,
  readSpan,
  type DigestEntry,
  type DigestList,
  type ReadMessage,
  type ReadSpanResult,
} from './recall-read';
export { searchArchive, type SearchHit, type SearchOptions, type SearchResult } from './search';
export { OWNER_PATTERN, inScope, ownerHash, sessionHash, type ArchiveScope } from './owners';
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
export { LocalArchive, type LocalArchiveOptions } from './local-archive';
export { CAPTURE_ROUTE, archivedLineBytes, captureEnd, captureRuns, captureSpanRange } from './capture-runs';
export {
  chainHeads,
  verifyArchive,
  verifyRun,
  type BreakKind,
  type ChainBreak,
  type RunVerdict,
  type VerifyOptions,
} from './verify';
export type { ChainHead } from './chain-reader';
export { verifyIncrement, type IncrementVerdict, type VerifyCursor } from './verify-increment';
export { pruneRuns, reindex, repairRun, sealExisting, type RepairAction } from './maintenance';
export {
  parseAge,
  receiptsSummary,
  savingsSummary,
  type ReceiptsSummary,
  type SavingsSummary,
  type SealKnowledge,
} from './savings';

// The archive as a transparency log (issue 29, docs/ARCHIVE_FORMAT.md#the-log).
export { loadLogKey } from './log-key';
export {
  noteKeyId,
  noteSigner,
  openNote,
  parseSignerKey,
  parseVerifierKey,
  signNote,
  signerKeyText,
  verifierKey,
  type NoteSigner,
  type NoteVerifier,
} from './signed-note';
export { CHECKPOINT_FILE, SpanLog, VKEY_FILE, type SpanLogOptions } from './span-log';
export {
  LogCheckFailed,
  listLogs,
  logFolder,
  logsRoot,
  parseSpanEntry,
  peekCheckpoint,
  proveConsistency,
  proveInclusion,
  readEntries,
  readLogFile,
  readLogState,
  readTile,
  tlogProofFor,
  type LogState,
} from './span-log-read';
export {
  checkpointBody,
  formatTlogProof,
  openCheckpoint,
  parseCheckpoint,
  parseTlogProof,
  spanEntry,
  verifyTlogProof,
  type Checkpoint,
} from './tlog-checkpoint';
export { leafHash, nodeHash, verifyConsistency, verifyInclusion, type Hash } from './tlog-merkle';
export { parseTilePath, tilePath } from './tlog-tiles';
export { WriterLog, defaultLogKeyFile, writerLog, type WriterLogOptions } from './writer-log';
export { LogProofs, type LogFields } from './log-proofs';
