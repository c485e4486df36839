import {
  KEPT_TOOL_RESULTS,
  planResultClearing,
  toolResultPointer,
  type NeutralMessage,
} from '@guardian/compaction';

import type { RequestContext } from '../handoff';
import { requestBytes } from '../../formats/format-adapter';
import type { StretchArchiver } from './stretch-archiver';

/** A request whose old tool results were replaced by pointers to their archived spans, and what that saved. */
export interface ClearedRequest {
  body: Buffer;
  tokens: number;
  cleared: number;
}

/**
 * Guardian's first measure over budget, before any summary (issue 32 item 3; observation masking, which matches LLM
 * summaries at half the cost: The Complexity Trap, 2025): the oldest tool results, not their calls, become a pointer
 * to the span that archives them, all but the newest KEPT_TOOL_RESULTS (libs/compaction planResultClearing says why
 * all of them).
 * Undefined when that is not enough to fit: the caller summarises as before.
 */
export async function clearOldResults(
  ctx: RequestContext,
  archiver: StretchArchiver,
): Promise<ClearedRequest | undefined> {
  const { conv, count } = ctx;
  const plan = resultClearing(conv.messages, count.tokens, ctx);
  if (!plan) return undefined;
  const replaceResults = new Map<number, string>();
  for (const c of plan.cleared) {
    // Archived once per session and message, as a spilled paste is: the pointer names where the original is.
    const ref = await archiver.spill(ctx, c.index);
    replaceResults.set(
      c.index,
      toolResultPointer({ tool: c.tool, tokens: c.tokens, ref: ref?.ref, gist: c.gist }),
    );
  }
  const keep = conv.messages.map((_, i) => i);
  const json = ctx.adapter.rebuild(conv, { keep, replaceResults });
  return {
    body: requestBytes(json, conv, ctx.adapter.itemsKey),
    tokens: count.tokens - plan.tokens,
    cleared: plan.cleared.length,
  };
}

/**
 * Which old tool results clearing would replace for a request of these messages and tokens, when that alone makes it
 * fit: the engine clears them; the background pre-compactor, planning the next turn, makes no summary it would not
 * need (ADR 0009).
 */
export function resultClearing(
  messages: readonly NeutralMessage[],
  tokens: number,
  ctx: Pick<RequestContext, 'budget' | 'count'>,
): ReturnType<typeof planResultClearing> {
  return planResultClearing(messages, {
    keep: KEPT_TOOL_RESULTS,
    enough: tokens - ctx.budget.budget,
    counter: ctx.count.counter,
  });
}
