import {
  allowedCuts,
  chooseMemo,
  fullBlockTokens,
  nextBlockSource,
  pinsByMessage,
  weighBlock,
  type BlockContext,
  type BlockSource,
  type PlanInput,
  type RebuildInput,
} from '@guardian/compaction';
import type { MemoEntry } from '@guardian/memo';

import type { CompactionSection } from '../../config/config-sections';
import type { RequestContext } from '../handoff';
import { pendingStart } from './stretch-service';

/** What the planner (libs/compaction) is given for one request, and the memo entry it starts from. */
export interface RequestPlanInput {
  block: BlockContext;
  memo?: MemoEntry;
  /** `rebuildInput(block, blockSource(memo))`, made while weighing the memo: the rebuild around a reused cut. */
  memoRebuild?: RebuildInput;
  input: PlanInput;
}

/**
 * The planner's input for a request: the block context (pins by message), the memo entry to start from (the earliest
 * of the conversation's cuts that still fits, chooseMemo), and how a new cut's block is weighed. The foreground
 * engine and the background pre-compactor both plan from here, so they choose the same cuts (issue 14).
 */
export function requestPlanInput(
  ctx: RequestContext,
  compaction: CompactionSection,
  entries: readonly MemoEntry[],
): RequestPlanInput {
  const { conv, count, budget } = ctx;
  const pinMaxChars = compaction.pinMaxChars;
  const block: BlockContext = {
    messages: conv.messages,
    fixedChars: conv.fixedChars,
    counter: count.counter,
    budget,
    pinMaxChars,
    pinsBy: pinMaxChars > 0 ? pinsByMessage(conv.messages) : [],
    ledgerMaxChars: compaction.ledgerMaxChars,
  };
  const base: Omit<PlanInput, 'memo'> = {
    messages: conv.messages,
    fixedChars: conv.fixedChars,
    counter: count.counter,
    budget,
    keep: compaction.keepRecent,
    requestTokens: count.tokens,
    allowed: allowedCuts(conv.messages),
  };
  const chosen = chooseMemo(
    base,
    entries.map((entry) => {
      const { tokens, rebuild } = weighBlock(block, blockSource(entry));
      return { entry, cut: entry.cut, summaryTokens: tokens, rebuild };
    }),
  );
  const memoSource = chosen ? blockSource(chosen.entry) : undefined;
  return {
    block,
    memo: chosen?.entry,
    memoRebuild: chosen?.rebuild,
    input: {
      ...base,
      memo: chosen ? { cut: chosen.cut, summaryTokens: chosen.summaryTokens } : undefined,
      newBlockTokens: (cut) => fullBlockTokens(block, nextBlockSource(block, memoSource, cut)),
    },
  };
}

/** A memo entry as the block sees it. */
export function blockSource(entry: MemoEntry): BlockSource {
  return {
    summary: entry.summary,
    cut: entry.cut,
    spans: entry.spans,
    spanTotal: entry.spanTotal,
    deferred: pendingStart(entry) !== undefined,
    mustKeep: entry.mustKeep,
  };
}
