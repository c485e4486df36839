import { tokensForChars } from './estimate';
import { RECALL_TOOL_NAMES } from './recall-tools';
import { valueLine } from './stated-values';
import { planToolClearing, TOOL_POINTER_WITH_GIST_MAX_CHARS, type ToolUse } from './tool-clearing';
import type { Counter, NeutralMessage } from './types';

/** The newest this many tool results stay whole (Anthropic's `clear_tool_uses` default keep, issue 32 item 3). */
export const KEPT_TOOL_RESULTS = 3;

/** One message whose tool results are replaced by a pointer. */
interface ClearedResult {
  index: number;
  /** The tool that answered (the name of its call), or '' when the call is not in the request. */
  tool: string;
  /** The tokens the message took. */
  tokens: number;
  /** The result's first line holding an exact value (or its first line), for the pointer to quote. */
  gist: string;
}

export interface ResultClearing {
  cleared: ClearedResult[];
  /** Tokens the clearing removes, pointers subtracted. */
  tokens: number;
}

/**
 * Guardian's first measure over budget (issue 32 item 3): every tool result but the newest `keep`, not the calls,
 * replaced by a short pointer, as Anthropic's `clear_tool_uses` does with its default keep. Only messages that hold
 * tool results and nothing a person typed are cleared, and never the answers of guardian's own recall tools (the model
 * asked for them back). Undefined when that cannot remove `enough` tokens: the caller then summarises as before.
 *
 * All of them, not just what the budget needs: cleared to the budget, a session one tool call longer clears one more
 * result on every turn, so every request sits at the budget: on the tool-clearing bench (40 turns at 32,768, chat) that
 * forwarded 767,484 tokens where summarising forwarded 557,461. Cleared all but the newest few, each request carries
 * only those whole, the results cleared before stay cleared in the same bytes, and the bench forwards 343,179 tokens
 * with no summariser call (docs/BENCHMARKS.md).
 */
export function planResultClearing(
  messages: readonly NeutralMessage[],
  opts: { keep: number; enough: number; counter: Counter },
): ResultClearing | undefined {
  const names = new Map<string, string>();
  for (const m of messages)
    if (m.callIds.length === m.toolCalls.length)
      m.callIds.forEach((id, i) => names.set(id, m.toolCalls[i]!.name));
  const pointer = tokensForChars(TOOL_POINTER_WITH_GIST_MAX_CHARS, opts.counter);
  const uses: ToolUse[] = [];
  for (const [i, m] of messages.entries()) {
    if (m.resultIds.length === 0 || m.userTyped || m.role === 'system') continue;
    // A message with several results gets one pointer each: the extra ones are taken off what it saves.
    const extra = (m.resultIds.length - 1) * pointer;
    uses.push({
      key: String(i),
      name: names.get(m.resultIds[0]!) ?? '',
      resultTokens: tokensForChars(m.chars, opts.counter) - extra,
      inputTokens: 0,
    });
  }
  const plan = planToolClearing(uses, {
    keep: opts.keep,
    excludeTools: [...RECALL_TOOL_NAMES],
    pointerTokens: pointer,
  });
  if (!plan || plan.tokens < opts.enough) return undefined;
  const byKey = new Map(uses.map((u) => [u.key, u]));
  return {
    cleared: plan.results.map((key) => {
      const u = byKey.get(key)!;
      return {
        index: Number(key),
        tool: u.name,
        tokens: tokensForChars(messages[Number(key)]!.chars, opts.counter),
        gist: valueLine(messages[Number(key)]!.text),
      };
    }),
    tokens: plan.tokens,
  };
}
