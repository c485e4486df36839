import {
  newestTyped,
  rebuiltTokens,
  staleRecall,
  tokensForChars,
  type RebuildPlan,
  type StaleRecall,
} from '@guardian/compaction';
import type { MemoEntry } from '@guardian/memo';

import type { RequestContext } from '../handoff';

/** What stale recall added to one request (issue 32 item 2), for its counter and event. */
export interface RecallFacts {
  excerpts: number;
  chars: number;
  names: number;
}

/**
 * Adds the stale-recall block after the newest message the user typed, when that message names what only evicted
 * messages hold (libs/compaction `staleRecall`). The block goes after the question, not into the summary block, so
 * the bytes before the kept tail stay those of the cut (ARCHITECTURE.md#compaction). Only a plain-text message that
 * was not itself cut takes it, and only when the request still fits the budget with it: a recall never makes a
 * request refused. `entries` are the conversation's memo entries, which name the span of each evicted message.
 */
export function addStaleRecall(opts: {
  ctx: RequestContext;
  plan: RebuildPlan;
  replaceText: Map<number, string>;
  entries: readonly MemoEntry[];
  maxChars: number;
}): RecallFacts | undefined {
  const { ctx, plan, replaceText } = opts;
  const { conv, count, budget } = ctx;
  if (opts.maxChars <= 0 || plan.cut <= 0 || plan.block === undefined) return undefined;
  const newest = newestTyped(conv.messages, plan.cut);
  const asked = newest === undefined ? undefined : conv.messages[newest];
  if (newest === undefined || !asked?.spillable || replaceText.has(newest)) return undefined;
  const recall: StaleRecall | undefined = staleRecall({
    messages: conv.messages,
    cut: plan.cut,
    newest,
    carried: plan.block,
    maxChars: opts.maxChars,
    spanOf: (i) => spanOf(opts.entries, i),
  });
  if (!recall) return undefined;
  const text = `${asked.text}\n\n${recall.text}`;
  const before = rebuiltTokens(
    { messages: conv.messages, fixedChars: conv.fixedChars, counter: count.counter },
    plan,
    replaceText,
  );
  if (before + tokensForChars(recall.text.length + 2, count.counter) > budget.budget) return undefined;
  replaceText.set(newest, text);
  return { excerpts: recall.excerpts.length, chars: recall.text.length, names: recall.names };
}

/** The span of the stretch that holds message `index`: the memo entry whose [from, cut) covers it. */
function spanOf(entries: readonly MemoEntry[], index: number): string | undefined {
  for (const e of entries) if ((e.from ?? 0) <= index && index < e.cut && e.span) return e.span;
  return undefined;
}
