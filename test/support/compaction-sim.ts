import {
  chooseRebuild,
  computeBudget,
  evictedIndexes,
  fullBlockTokens,
  mergePins,
  mustKeepBullets,
  nextBlockSource,
  pinsByMessage,
  planCompaction,
  planRebuild,
  rebuildInput,
  rebuiltTokens,
  requestChars,
  spillPointer,
  spillText,
  tokensForChars,
  type BlockContext,
  type BlockSource,
  type Counter,
  type NeutralMessage,
  type RebuildInput,
  type RebuildPlan,
} from '@guardian/compaction';

/**
 * The compaction engine's decisions without its I/O, for property tests: the planner, a memo of sticky cuts, a
 * summariser that writes a summary of any length (with the `## Must Keep` bullets of the facts it read), the rebuild,
 * and the spilled texts, exactly as CompactionEngine.decide composes them from libs/compaction.
 */
export interface SimSettings {
  window: number;
  reserve: number;
  fraction: number;
  pinMaxChars: number;
  /** GUARDIAN_LEDGER_MAX_CHARS (0: the instruction ledger is off). */
  ledgerMaxChars: number;
  /** GUARDIAN_STATED_MAX_CHARS (0 or absent: no stated values). */
  statedMaxChars?: number;
  charsPerToken: number;
  /** Characters of filler in every summary the fake summariser writes. */
  summaryChars: number;
}

/** One request of a session: its messages, and the characters it carries outside them (tools, top-level system). */
export interface SimRequest {
  messages: readonly NeutralMessage[];
  fixedChars: number;
}

export interface SimTurn {
  messages: readonly NeutralMessage[];
  ctx: BlockContext;
  requestTokens: number;
  action: 'fits' | 'reuse' | 'compact' | 'no-cut';
  /** What went out: undefined when the request was forwarded as the client sent it. */
  plan?: RebuildPlan;
  /** What the plan was made from (the pins and the ledger before any shedding, the block renderer). */
  input?: RebuildInput;
  /** index -> the text forwarded for a spilled message. */
  replaced: Map<number, string>;
  /** Tokens forwarded, by guardian's own count. */
  tokens: number;
  /** Every text forwarded: the block and each kept message (spilled ones as cut). */
  text: string;
}

export const FACT_PATTERN = /FACT-[A-Za-z0-9-]+/g;

export function simulate(requests: readonly SimRequest[], s: SimSettings): SimTurn[] {
  const counter: Counter = { charsPerToken: s.charsPerToken, factor: 1 };
  const budget = computeBudget(s.window, 0.85, s.reserve);
  let memo: BlockSource | undefined;
  let spans = 0;
  const turns: SimTurn[] = [];
  for (const { messages, fixedChars } of requests) {
    const ctx: BlockContext = {
      messages,
      fixedChars,
      counter,
      budget,
      pinMaxChars: s.pinMaxChars,
      pinsBy: s.pinMaxChars > 0 ? pinsByMessage(messages) : [],
      ledgerMaxChars: s.ledgerMaxChars,
      statedMaxChars: s.statedMaxChars,
    };
    const requestTokens = tokensForChars(requestChars(messages, fixedChars), counter);
    const plan = planCompaction({
      messages,
      fixedChars,
      counter,
      budget,
      keep: { fraction: s.fraction },
      requestTokens,
      memo: memo ? { cut: memo.cut, summaryTokens: fullBlockTokens(ctx, memo) } : undefined,
      newBlockTokens: (cut) => fullBlockTokens(ctx, nextBlockSource(ctx, memo, cut)),
    });
    const turn: SimTurn = {
      messages,
      ctx,
      requestTokens,
      action: plan.action,
      replaced: new Map(),
      tokens: requestTokens,
      text: messages.map((m) => m.text).join('\n'),
    };
    turns.push(turn);
    if (plan.action === 'fits') continue;
    let source: BlockSource | undefined;
    if (plan.action === 'reuse') source = memo;
    else if (plan.action === 'compact') {
      const read = evictedIndexes(messages, plan.from, plan.cut).map((i) => messages[i]!.text);
      const facts = [...new Set(read.join('\n').match(FACT_PATTERN) ?? [])];
      const summary = `Summary of ${plan.from}-${plan.cut}. ${'s'.repeat(s.summaryChars)}\n## Must Keep\n${facts.map((f) => `- ${f}`).join('\n') || '- (none)'}`;
      spans += 1;
      memo = {
        summary,
        cut: plan.cut,
        spans: [
          ...(plan.from > 0 ? (memo?.spans ?? []) : []),
          `run-${spans}/${String(spans).padStart(4, '0')}.json`,
        ].slice(-16),
        spanTotal: spans,
        deferred: false,
        mustKeep: mergePins(plan.from > 0 ? (memo?.mustKeep ?? []) : [], mustKeepBullets(summary)).slice(-64),
      };
      source = memo;
    }
    const inputs = {
      cut: source ? rebuildInput(ctx, source) : undefined,
      none: rebuildInput(ctx, undefined),
    };
    const withCut = inputs.cut ? planRebuild(inputs.cut) : undefined;
    const chosen = chooseRebuild(requestTokens, withCut, () => planRebuild(inputs.none));
    if (!chosen) continue;
    for (const sp of chosen.spills) {
      const cut = spillText(messages[sp.index]!.text, {
        roomTokens: sp.roomTokens,
        counter,
        keep: ctx.pinsBy[sp.index],
        pointer: (o, n) =>
          spillPointer({
            position: sp.index + 1,
            originalTokens: n,
            ref: 'run-x/0001.json',
            omittedTokens: o,
          }),
      });
      if (cut) turn.replaced.set(sp.index, cut.text);
    }
    const tokens = rebuiltTokens({ messages, fixedChars, counter }, chosen, turn.replaced);
    // The engine's guard: a rebuild no smaller than the request is not forwarded.
    if (tokens >= requestTokens) {
      turn.replaced.clear();
      continue;
    }
    turn.plan = chosen;
    turn.input = chosen.cut > 0 ? inputs.cut : inputs.none;
    turn.tokens = tokens;
    turn.text = [
      chosen.block ?? '',
      ...chosen.keep.map((i) => turn.replaced.get(i) ?? messages[i]!.text),
    ].join('\n');
  }
  return turns;
}

/**
 * The ledger a test expects, from what it planted rather than from the library's rule: every sentence matching
 * `planted` in a user message before the cut, newest first while they fit `maxChars` (each costing its length plus
 * its bullet and line break), returned oldest first as the rebuild carries them.
 */
export function plantedLedger(
  messages: readonly NeutralMessage[],
  cut: number,
  planted: RegExp,
  maxChars: number,
): string[] {
  const out: string[] = [];
  let total = 0;
  for (let i = Math.min(cut, messages.length) - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'user') continue;
    for (const found of [...m.text.matchAll(new RegExp(planted.source, 'g'))].reverse()) {
      if (total + found[0].length + 3 > maxChars) return out.reverse();
      total += found[0].length + 3;
      out.push(found[0]);
    }
  }
  return out.reverse();
}
