export {
  fullBlockTokens,
  nextBlockSource,
  rebuildInput,
  weighBlock,
  type BlockContext,
  type BlockSource,
} from './block-plan';
export {
  computeBudget,
  marginedBudget,
  overflowRetryBudget,
  sizeProvesFit,
  worstTokensForBytes,
} from './budget';
export { carriedAnchors } from './anchors';
export { checkpointSummary } from './checkpoint';
export { allowedCuts, evictedIndexes } from './cuts';
export { Calibration, requestChars, silentlyTruncated, tokensForChars } from './estimate';
export { carriedLedger, LEDGER_HEADING } from './ledger';
export { nextTurnMessages } from './next-turn';
export { capPins, carriedPins, extractPins, mergePins, mustKeepBullets, pinsByMessage } from './pins';
export { chooseMemo, planCompaction, type PlanInput } from './planner';
export { canonicalDigest, hashText, hashTexts, prefixHashes, sortedKeyJson } from './prefix-hash';
export {
  chooseRebuild,
  newestTyped,
  planRebuild,
  rebuiltTokens,
  type RebuildInput,
  type RebuildPlan,
} from './rebuild';
export { RECALL_HEADING, staleRecall, type StaleRecall } from './recall';
export { RECALL_TOOLS, RECALL_TOOL_NAMES } from './recall-tools';
export { handoffMarkdown, sessionHandoff, type SessionHandoff } from './session-handoff';
export { spillPointer, spillText } from './spill';
export { STATED_HEADING } from './stated-values';
export { KEPT_TOOL_RESULTS, planResultClearing } from './result-clearing';
export { planToolClearing, toolResultPointer, TOOL_POINTER_MAX_CHARS, type ToolUse } from './tool-clearing';
export {
  ANCHORS_HEADING,
  ARCHIVE_FENCE,
  carriedByBlock,
  PINS_HEADING,
  renderSummaryBlock,
} from './summary-block';
export {
  SUMMARY_REQUEST_TAG,
  buildSummaryPrompt,
  groupForPrompts,
  maxSummaryTokens,
  summaryPromptLimit,
  transcriptLine,
  transcriptLineMaxChars,
  type SummaryPrompt,
} from './summary-prompt';
export type { BudgetInfo, Counter, NeutralMessage } from './types';
