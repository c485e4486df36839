import { answerCeiling } from './budget';
import { evictedIndexes } from './cuts';
import { carriedLedger, instructionsOf } from './ledger';
import { carriedPins } from './pins';
import { blockTokens, type RebuildInput } from './rebuild';
import { capSummary, MAX_BLOCK_SPANS, renderSummaryBlock } from './summary-block';
import { summaryMaxChars } from './summary-prompt';
import { statedValues } from './stated-values';
import { markCarried } from './supersede';
import type { BudgetInfo, Counter, NeutralMessage } from './types';

/** What a summary block stands for: a memoized stretch chain, or the one a new summary will make. */
export interface BlockSource {
  summary: string;
  /** The cut the summary covers. */
  cut: number;
  /** Written span refs, oldest first (the block names the newest MAX_BLOCK_SPANS). */
  spans: readonly string[];
  spanTotal?: number;
  /** Some of the covered messages are not archived yet. */
  deferred: boolean;
  /** `## Must Keep` bullets collected from the chain's summaries. */
  mustKeep: readonly string[];
  /** Identifiers the block carries verbatim (carriedAnchors, kept with the memo entry). */
  anchors?: readonly string[];
}

/** One request as the block and the rebuild see it. */
export interface BlockContext {
  messages: readonly NeutralMessage[];
  fixedChars: number;
  counter: Counter;
  budget: BudgetInfo;
  /** GUARDIAN_PIN_MAX_CHARS (0: pinning off). */
  pinMaxChars: number;
  /** The pins each message asks for (pinsByMessage); empty when pinning is off. */
  pinsBy: readonly (readonly string[])[];
  /** GUARDIAN_LEDGER_MAX_CHARS (0: the instruction ledger is off). */
  ledgerMaxChars: number;
  /** GUARDIAN_ANCHOR_MAX_CHARS: what a new cut's anchors may take, for weighing its block (0 or absent: none). */
  anchorMaxChars?: number;
  /** GUARDIAN_STATED_MAX_CHARS: the stated values' cap (0 or absent: none carried). */
  statedMaxChars?: number;
}

/** A span ref as long as real ones (`<yyyymmdd-HHMMSS>-<8 hex>-<8 hex>/NNNN.json`), for sizing a block before it exists. */
const REF_PLACEHOLDER = `${'0'.repeat(15)}-${'0'.repeat(8)}-${'0'.repeat(8)}/0000.json`;

/**
 * The rebuild's input around a block (or around no cut at all): the summary capped, the pins and the instruction
 * ledger it carries in shedding order, and how to render it with fewer of them.
 */
export function rebuildInput(ctx: BlockContext, block: BlockSource | undefined): RebuildInput {
  const base = {
    messages: ctx.messages,
    fixedChars: ctx.fixedChars,
    counter: ctx.counter,
    budget: ctx.budget.budget,
    newestBudget: ctx.budget.whole,
    ceiling: answerCeiling(ctx.budget),
    pinsBy: ctx.pinsBy,
  };
  if (!block) return { ...base, cut: 0, pins: [] };
  const summary = capSummary(block.summary, summaryMaxChars(ctx.budget, ctx.counter));
  let last:
    | { pins: readonly string[]; ledger: readonly string[]; stated: readonly string[]; text: string }
    | undefined;
  const evicted = evictedIndexes(ctx.messages, 0, block.cut).length;
  const unmarked = carriedPins({
    byMessage: ctx.pinsBy,
    cut: block.cut,
    mustKeep: block.mustKeep,
    summary,
    maxChars: ctx.pinMaxChars,
  });
  // Derived from the messages the client resends, as pins are: the memo stores nothing for them
  // (ARCHITECTURE.md#sessions).
  const carriedLines = carriedLedger({
    messages: ctx.messages,
    cut: block.cut,
    maxChars: ctx.ledgerMaxChars,
    carried: unmarked,
  });
  // Facts that change (issue 32 item 1): an older value is marked superseded, the newer current.
  const { pins, ledger, stated } = markCarried({
    pins: unmarked,
    ledger: carriedLines,
    stated: statedValues({
      messages: ctx.messages,
      cut: block.cut,
      maxChars: ctx.statedMaxChars ?? 0,
      carried: [...unmarked, ...carriedLines],
    }),
    pinAt: (p) => newestAt(block.cut, (i) => ctx.pinsBy[i]?.includes(p) === true),
    ledgerAt: (l) =>
      newestAt(block.cut, (i, m = ctx.messages[i]) => (m ? instructionsOf(m) : []).includes(l)),
  });
  return {
    ...base,
    cut: block.cut,
    pins,
    ledger,
    stated,
    renderBlock: (carriedPins, ledger, stated = []) => {
      // The planner weighs the block with every pin, then the rebuild places the same block: the text is made once.
      if (
        last &&
        sameStrings(last.pins, carriedPins) &&
        sameStrings(last.ledger, ledger) &&
        sameStrings(last.stated, stated)
      )
        return last.text;
      const text = renderSummaryBlock({
        summary,
        evictedMessages: evicted,
        spans: block.spans,
        spanTotal: block.spanTotal,
        deferred: block.deferred,
        pins: carriedPins,
        ledger,
        stated,
        anchors: block.anchors,
      });
      last = { pins: [...carriedPins], ledger: [...ledger], stated: [...stated], text };
      return text;
    },
  };
}

/**
 * An upper bound of the block a new cut at `cut` will place, before its summary exists: a summary of the longest the
 * block carries, every reference slot filled, the line for older spans, every pin, the whole ledger and every stated value.
 */
export function nextBlockSource(ctx: BlockContext, memo: BlockSource | undefined, cut: number): BlockSource {
  return {
    summary: 'x'.repeat(summaryMaxChars(ctx.budget, ctx.counter)),
    cut,
    spans: new Array<string>(MAX_BLOCK_SPANS).fill(REF_PLACEHOLDER),
    spanTotal: MAX_BLOCK_SPANS + 1,
    deferred: false,
    mustKeep: memo?.mustKeep ?? [],
    anchors: (ctx.anchorMaxChars ?? 0) > 0 ? ['x'.repeat(ctx.anchorMaxChars ?? 0)] : [],
  };
}

/**
 * A block weighed with every pin, ledger entry and stated value it may carry (what the planner weighs a cut by), with the rebuild
 * input the weighing made: a memo hit rebuilds around that very block instead of making it again.
 */
export function weighBlock(ctx: BlockContext, block: BlockSource): { tokens: number; rebuild: RebuildInput } {
  const rebuild = rebuildInput(ctx, block);
  return {
    tokens: blockTokens(
      rebuild.renderBlock?.(rebuild.pins, rebuild.ledger ?? [], rebuild.stated ?? []),
      ctx.counter,
    ),
    rebuild,
  };
}

/** Tokens of a block with every pin and ledger entry it may carry (weighBlock's tokens). */
export function fullBlockTokens(ctx: BlockContext, block: BlockSource): number {
  return weighBlock(ctx, block).tokens;
}

/** The newest message index before `cut` that says a line, or -1 (a summary's own bullet). */
function newestAt(cut: number, says: (i: number) => boolean): number {
  for (let i = cut - 1; i >= 0; i--) if (says(i)) return i;
  return -1;
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
