import { RECALL_TOOLS } from './recall-tools';

/** One tool call and its result, oldest first, as the clearing rule weighs it (any wire format). */
export interface ToolUse {
  /** What the caller clears by: a tool-use id, or the index of the message holding the result. */
  key: string;
  /** The tool's name (exclude lists and `clear_tool_inputs` name tools). */
  name: string;
  /** Tokens the result takes now; the pointer that replaces it is subtracted by the caller's own measure. */
  resultTokens: number;
  /** Tokens the call's input takes. */
  inputTokens: number;
}

/**
 * Which old tool results to clear: Anthropic's `clear_tool_uses_20250919` (keep, exclude_tools, clear_tool_inputs,
 * clear_at_least) and guardian's own first measure over budget (issue 32 item 3), which stops once `enough` is cleared.
 */
export interface ToolClearingRule {
  /** The newest this many tool uses stay whole. */
  keep: number;
  /** Tools whose uses are never cleared. */
  excludeTools?: readonly string[];
  /** Also clear the calls' inputs: every cleared call's (true) or only these tools' (a list). */
  clearInputs?: boolean | readonly string[];
  /** Stop once this many tokens are cleared (guardian's measure); absent: every use older than `keep` is cleared. */
  enough?: number;
  /** Clear nothing unless at least this many tokens go (Anthropic's `clear_at_least`). */
  atLeast?: number;
  /** Tokens a pointer takes in place of a result, subtracted from what each clearing saves. */
  pointerTokens: number;
}

export interface ToolClearing {
  /** Keys of the uses whose results are replaced by a pointer, oldest first. */
  results: string[];
  /** Keys of the uses whose inputs are cleared too. */
  inputs: string[];
  /** Tokens the clearing removes, pointers subtracted. */
  tokens: number;
}

/**
 * The one rule both callers apply: the oldest uses first, the newest `keep` whole, excluded tools untouched, a result
 * that is no larger than its pointer left as it is. Deterministic in its inputs, so a conversation that grows by a turn
 * clears the same old results again (the backend's prefix cache still matches up to the first newly cleared one).
 * Undefined when nothing is cleared, or less than `atLeast`.
 */
export function planToolClearing(uses: readonly ToolUse[], rule: ToolClearingRule): ToolClearing | undefined {
  const excluded = new Set(rule.excludeTools ?? []);
  const inputsOf = (name: string): boolean =>
    rule.clearInputs === true || (Array.isArray(rule.clearInputs) && rule.clearInputs.includes(name));
  const clearable = uses.slice(0, Math.max(0, uses.length - Math.max(0, rule.keep)));
  const out: ToolClearing = { results: [], inputs: [], tokens: 0 };
  for (const use of clearable) {
    if (rule.enough !== undefined && out.tokens >= rule.enough) break;
    if (excluded.has(use.name)) continue;
    const saved = use.resultTokens - rule.pointerTokens;
    const input = inputsOf(use.name) ? use.inputTokens : 0;
    if (saved <= 0 && input <= 0) continue;
    out.results.push(use.key);
    out.tokens += Math.max(0, saved);
    if (input > 0) {
      out.inputs.push(use.key);
      out.tokens += input;
    }
  }
  if (out.results.length === 0 || out.tokens < (rule.atLeast ?? 0)) return undefined;
  return out;
}

/**
 * The text a cleared result is replaced by: what it was, how big, and where the original is, so the model can ask for
 * it again (the recall tools) instead of guessing. `ref` absent: the result was not archived (context editing the
 * client asked for, or a volume that cannot be written).
 */
export function toolResultPointer(args: {
  tool: string;
  tokens: number;
  ref?: string;
  gist?: string;
}): string {
  const where = args.ref
    ? `archived as ${args.ref}; with the recall MCP server, ${RECALL_TOOLS.readSpan} opens it`
    : 'not archived';
  const gist = args.gist
    ? `; it read: "${args.gist.length <= POINTER_GIST_MAX_CHARS ? args.gist : `${args.gist.slice(0, POINTER_GIST_MAX_CHARS - 1)}…`}"`
    : '';
  return `[context-guardian: old result of ${args.tool || 'a tool'} cleared (${args.tokens} tokens), ${where}${gist}]`;
}

/**
 * The most characters of the result a pointer quotes (its first line holding an exact value, statedValues' rule):
 * the artifact id or the error a later turn may ask about stays in the request, the rest is one recall away.
 */
const POINTER_GIST_MAX_CHARS = 160;

/** The most characters a pointer takes (a long tool name and ref): what a clearing plans each pointer at. */
export const TOOL_POINTER_MAX_CHARS = toolResultPointer({
  tool: 't'.repeat(64),
  tokens: 99_999_999,
  ref: 'r'.repeat(80),
}).length;

/** The most characters a pointer that quotes the result's line takes. */
export const TOOL_POINTER_WITH_GIST_MAX_CHARS = toolResultPointer({
  tool: 't'.repeat(64),
  tokens: 99_999_999,
  ref: 'r'.repeat(80),
  gist: 'g'.repeat(POINTER_GIST_MAX_CHARS),
}).length;
