import { tokensForChars } from './estimate';
import { RECALL_TOOL_NAMES } from './recall-tools';
import { planToolClearing, TOOL_POINTER_MAX_CHARS, type ToolUse } from './tool-clearing';
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
}

export interface ResultClearing {
  cleared: ClearedResult[];
  /** Tokens the clearing removes, pointers subtracted. */
  tokens: number;
}

/**
 * Guardian's first measure over budget (issue 32 item 3): the oldest tool results, not the calls, replaced by a short
 * pointer, the newest `keep` kept whole, stopping once `enough` tokens are cleared. Only messages that hold tool
 * results and nothing a person typed are cleared, and never the answers of guardian's own recall tools (the model
 * asked for them back). Undefined when clearing cannot remove `enough`: the caller then summarises as before.
 */
export function planResultClearing(
  messages: readonly NeutralMessage[],
  opts: { keep: number; enough: number; counter: Counter },
): ResultClearing | undefined {
  const names = new Map<string, string>();
  for (const m of messages)
    if (m.callIds.length === m.toolCalls.length)
      m.callIds.forEach((id, i) => names.set(id, m.toolCalls[i]!.name));
  const pointer = tokensForChars(TOOL_POINTER_MAX_CHARS, opts.counter);
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
    enough: opts.enough,
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
      };
    }),
    tokens: plan.tokens,
  };
}
