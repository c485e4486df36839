import { Injectable } from '@nestjs/common';

import {
  allowedCuts,
  chooseMemo,
  chooseRebuild,
  fullBlockTokens,
  nextBlockSource,
  nextTurnMessages,
  pinsByMessage,
  weighBlock,
  type BlockContext,
  type BlockSource,
  type PlanInput,
  type RebuildInput,
  planCompaction,
  planRebuild,
  rebuiltTokens,
  rebuildInput,
  requestChars,
  spillPointer,
  spillText,
  tokensForChars,
  type RebuildPlan,
} from '@guardian/compaction';

import type { MemoEntry } from '@guardian/memo';

import type { CompactionSection } from '../../config/config-sections';
import { conversationPrefixHashes, requestBytes } from '../../formats/format-adapter';
import { GuardianConfig } from '../../config/guardian-config';
import type { Decision, NewestCut, RequestContext } from '../handoff';
import { DecisionReporter } from './decision-reporter';
import { clearOldResults } from './old-results';
import { conversationJob, PrecompactJobs } from './precompact-jobs';
import { addStaleRecall, type RecallFacts } from './stale-recall';
import { StretchArchiver } from './stretch-archiver';
import { pendingStart, StretchService, type StretchResult } from './stretch-service';

/**
 * One over-budget request, top to bottom (ARCHITECTURE.md#compaction): plan the cut (libs/compaction), get its
 * summary (reused from the memo, or written once by the summariser and archived), plan the rebuild (libs/compaction:
 * pins, spills, shedding), then archive the spilled messages and let the format adapter write the request. The policy
 * lives in the pure library; this class does only the I/O around it. Throws only for the caller to fail open.
 */
@Injectable()
export class CompactionEngine {
  constructor(
    private readonly config: GuardianConfig,
    private readonly stretches: StretchService,
    private readonly archiver: StretchArchiver,
    private readonly reporter: DecisionReporter,
    private readonly precompacts: PrecompactJobs,
  ) {}

  async decide(ctx: RequestContext): Promise<Decision> {
    const { conv, count, budget } = ctx;
    const unchanged: Decision = {
      outcome: 'passthrough',
      tokensBefore: count.tokens,
      tokensAfter: count.tokens,
      rawForwarded: count.rawEstimate,
    };
    if (count.tokens <= budget.budget) return unchanged;

    const hashes = conversationPrefixHashes(conv);
    // The cut is planned from the cuts clients' requests took, never from a summary made ahead of need: that one is
    // taken only where this plan cuts too, and only when it is what this request would have asked the summariser
    // (StretchService.summarise), so what goes out does not depend on whether the background finished (ADR 0009).
    const found = await this.stretches.lookup(ctx, hashes);
    const entries = found.filter((e) => !e.precomputed);
    const planned = requestPlanInput(ctx, this.config.compaction, entries);
    const { block, memo } = planned;
    const plan = planCompaction(planned.input);
    if (plan.action === 'fits') return unchanged;

    if (ctx.dryRun) {
      const dry: Decision = { ...unchanged, outcome: 'dry_run' };
      this.reporter.dryRun(
        ctx,
        dry,
        plan.action === 'compact' || plan.action === 'reuse' ? plan.cut : 0,
        plan.action === 'reuse',
      );
      return dry;
    }

    // A new summary would be needed: old tool results cleared first, when that alone fits (issue 32 item 3).
    if (plan.action === 'compact' && this.config.compaction.clearToolResults) {
      const cleared = await clearOldResults(ctx, this.archiver);
      if (cleared) {
        const decision: Decision = {
          outcome: 'spilled',
          body: cleared.body,
          tokensBefore: count.tokens,
          tokensAfter: cleared.tokens,
          rawForwarded: Math.ceil(cleared.tokens / Math.max(count.counter.factor, 0.01)),
          compactedAt: new Date().toISOString(),
        };
        this.reporter.forwarded(ctx, decision, { pins: 0, spilled: 0, cleared: cleared.cleared });
        return decision;
      }
    }

    // Time this request spends getting its summary: near 0 on a memo hit, a summariser call otherwise (issue 14).
    const waitStarted = performance.now();
    let stretch: StretchResult | undefined;
    if (plan.action === 'reuse' && memo) stretch = await this.stretches.reuse(ctx, memo);
    else if (plan.action === 'compact' && this.stretches.worthSummarising(ctx, plan.from, plan.cut))
      stretch = await this.stretches.summarise(ctx, hashes, memo, plan.from, plan.cut, { known: found });
    if (stretch) {
      this.reporter.waited(stretch, (performance.now() - waitStarted) / 1000);
      this.precompacts.moved(conversationJob(ctx.session.stateHash, hashes), stretch.entry.cut);
    }

    // The memo entry as it was weighed (not one reuse() or summarise() replaced): its rebuild input is made already.
    const around =
      stretch && stretch.entry === memo && planned.memoRebuild
        ? planned.memoRebuild
        : stretch && rebuildInput(block, blockSource(stretch.entry));
    const withCut = around ? planRebuild(around) : undefined;
    const chosen = chooseRebuild(count.tokens, withCut, () => planRebuild(rebuildInput(block, undefined)));
    if (!chosen) return unchanged; // nothing could help without growing the request: forward it as sent
    // A stretch whose summary did not pay for itself stays archived and memoized; this request goes without it.
    if (chosen.cut === 0) stretch = undefined;
    const known = stretch ? [...entries, stretch.entry] : entries;
    const { body, tokens, spilled, newestCut, recall } = await this.render(ctx, chosen, block.pinsBy, known);
    // The plan's rooms hold every pointer, so this is only a guard: never forward more than the client sent.
    if ((!stretch && spilled === 0) || tokens >= count.tokens) return unchanged;
    const decision: Decision = {
      outcome: stretch ? (stretch.calls > 0 ? 'compacted' : 'reused') : 'spilled',
      body,
      tokensBefore: count.tokens,
      tokensAfter: tokens,
      rawForwarded: Math.ceil(tokens / Math.max(count.counter.factor, 0.01)),
      compactedAt: new Date().toISOString(),
    };
    if (newestCut) decision.newestCut = newestCut;
    this.reporter.forwarded(ctx, decision, { stretch, pins: chosen.pins.length, spilled, recall });
    return decision;
  }

  /** Archives each spilled message (once per session and paste), cuts its text, and writes the request. */
  private async render(
    ctx: RequestContext,
    plan: RebuildPlan,
    pinsBy: readonly (readonly string[])[],
    entries: readonly MemoEntry[],
  ): Promise<{ body: Buffer; tokens: number; spilled: number; newestCut?: NewestCut; recall?: RecallFacts }> {
    const { conv, count } = ctx;
    const replaceText = new Map<number, string>();
    let newestCut: NewestCut | undefined;
    for (const s of plan.spills) {
      const m = conv.messages[s.index]!;
      const ref = await this.archiver.spill(ctx, s.index);
      const cut = spillText(m.text, {
        roomTokens: s.roomTokens,
        counter: count.counter,
        keep: pinsBy[s.index],
        pointer: (omitted, original) =>
          spillPointer({
            position: s.index + 1,
            originalTokens: original,
            ref: ref?.ref,
            omittedTokens: omitted,
          }),
      });
      if (!cut) continue;
      replaceText.set(s.index, cut.text);
      if (s.newest) {
        newestCut = { originalTokens: cut.originalTokens, omittedTokens: cut.omittedTokens };
        if (ref) newestCut.ref = ref.ref;
      }
    }
    const spilled = replaceText.size;
    const recall = addStaleRecall({
      ctx,
      plan,
      replaceText,
      entries,
      maxChars: this.config.compaction.recallMaxChars,
    });
    const json = ctx.adapter.rebuild(conv, { keep: plan.keep, summaryBlock: plan.block, replaceText });
    const tokens = rebuiltTokens(
      { messages: conv.messages, fixedChars: conv.fixedChars, counter: count.counter },
      plan,
      replaceText,
    );
    return {
      body: requestBytes(json, conv, ctx.adapter.itemsKey),
      tokens,
      spilled,
      newestCut,
      recall,
    };
  }
}

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
 * engine plans the request itself from here; the background pre-compactor plans the request the next turn will send
 * (`ahead`: nextTurnMessages), with the same planner, so it summarises the cut that turn will take (ADR 0009).
 */
export function requestPlanInput(
  ctx: RequestContext,
  compaction: CompactionSection,
  entries: readonly MemoEntry[],
  opts: { ahead?: boolean } = {},
): RequestPlanInput {
  const { count, budget } = ctx;
  const conv = opts.ahead
    ? nextTurnOf(ctx)
    : { messages: ctx.conv.messages, fixedChars: ctx.conv.fixedChars, tokens: count.tokens };
  const pinMaxChars = compaction.pinMaxChars;
  const block: BlockContext = {
    messages: conv.messages,
    fixedChars: conv.fixedChars,
    counter: count.counter,
    budget,
    pinMaxChars,
    pinsBy: pinMaxChars > 0 ? pinsByMessage(conv.messages) : [],
    ledgerMaxChars: compaction.ledgerMaxChars,
    anchorMaxChars: compaction.anchorMaxChars,
    statedMaxChars: compaction.statedMaxChars,
  };
  const base: Omit<PlanInput, 'memo'> = {
    messages: conv.messages,
    fixedChars: conv.fixedChars,
    counter: count.counter,
    budget,
    keep: compaction.keepRecent,
    requestTokens: conv.tokens,
    allowed: allowedCuts(conv.messages),
    pinsBy: block.pinsBy,
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

/** The next turn's request as the planner sees it: this one's messages and count, and the turn projected on them. */
function nextTurnOf(ctx: RequestContext): {
  messages: RequestContext['conv']['messages'];
  fixedChars: number;
  tokens: number;
} {
  const { conv, count } = ctx;
  const messages = nextTurnMessages(conv.messages);
  const added = tokensForChars(requestChars(messages.slice(conv.messages.length), 0), count.counter);
  return { messages, fixedChars: conv.fixedChars, tokens: count.tokens + added };
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
    anchors: entry.anchors,
  };
}
