import {
  planToolClearing,
  toolResultPointer,
  TOOL_POINTER_MAX_CHARS,
  type ToolUse,
} from '@guardian/compaction';
import { z } from 'zod';

import { isObj } from './responses-shapes';

type Obj = Record<string, unknown>;

/** Anthropic's defaults (Context editing guide): clear tool uses past 100,000 input tokens keeping 3; compact at 150,000. */
const CLEAR_TOOL_USES_TRIGGER = 100_000;
const CLEAR_TOOL_USES_KEEP = 3;
const COMPACT_TRIGGER = 150_000;

const inputTokens = z.object({ type: z.literal('input_tokens'), value: z.number().int().positive() });
const clearToolUses = z.object({
  type: z.literal('clear_tool_uses_20250919'),
  trigger: z
    .union([inputTokens, z.object({ type: z.literal('tool_uses'), value: z.number().int().positive() })])
    .optional(),
  keep: z.object({ type: z.literal('tool_uses'), value: z.number().int().nonnegative() }).optional(),
  clear_at_least: inputTokens.nullish(),
  exclude_tools: z.array(z.string()).nullish(),
  clear_tool_inputs: z.union([z.boolean(), z.array(z.string())]).nullish(),
});
const clearThinking = z.object({
  type: z.literal('clear_thinking_20251015'),
  keep: z
    .union([
      z.object({ type: z.literal('thinking_turns'), value: z.number().int().nonnegative() }),
      z.object({ type: z.literal('all') }),
      z.literal('all'),
    ])
    .optional(),
});
const compact = z.object({
  type: z.literal('compact_20260112'),
  trigger: inputTokens.nullish(),
  pause_after_compaction: z.boolean().optional(),
  instructions: z.string().nullish(),
});
/** `BetaContextManagementConfig` of @anthropic-ai/sdk, as a request sends it. */
export const contextManagementSchema = z.object({
  edits: z.array(z.discriminatedUnion('type', [clearToolUses, clearThinking, compact])).optional(),
});
export type ContextManagement = z.infer<typeof contextManagementSchema>;
export type CompactEdit = z.infer<typeof compact>;

/** `BetaClearToolUses20250919EditResponse` | `BetaClearThinking20251015EditResponse`. */
export type AppliedEdit =
  | { type: 'clear_tool_uses_20250919'; cleared_tool_uses: number; cleared_input_tokens: number }
  | { type: 'clear_thinking_20251015'; cleared_thinking_turns: number; cleared_input_tokens: number };

export interface EditedMessages {
  messages: unknown[];
  applied: AppliedEdit[];
  /** The threshold compaction asked for, when the request crosses its trigger: the caller compacts. */
  compact?: CompactEdit;
}

/** Why a `context_management` Anthropic would refuse is refused, or undefined. */
export function contextManagementRefusal(value: unknown): string | undefined {
  const parsed = contextManagementSchema.safeParse(value);
  if (!parsed.success) return `context_management: ${parsed.error.issues[0]?.message ?? 'invalid'}`;
  const edits = parsed.data.edits ?? [];
  const at = edits.findIndex((e) => e.type === 'clear_thinking_20251015');
  // The Context editing guide: clear_thinking must come first when it is combined with other strategies.
  if (at > 0) return 'context_management: clear_thinking_20251015 must be the first edit';
  return undefined;
}

/**
 * True when the edits change nothing whatever the messages hold (Claude Code sends `clear_thinking_20251015` with
 * `keep: "all"` on every request): the field is then cut from the bytes and the messages are not read.
 */
export function editsAreNoOps(value: unknown): boolean {
  const parsed = contextManagementSchema.safeParse(value);
  if (!parsed.success) return false;
  return (parsed.data.edits ?? []).every(
    (e) => e.type === 'clear_thinking_20251015' && (e.keep === 'all' || e.keep?.type === 'all'),
  );
}

/**
 * Applies the request's context edits in their order, for a backend that has none (issue 27 item 2): thinking blocks
 * of older assistant turns dropped, old tool results replaced by guardian's pointer (the rule guardian's own budget
 * uses, libs/compaction `planToolClearing`). `tokens` is the request's estimate of a character count; `total` the
 * request's input tokens, which the triggers compare against.
 */
export function applyContextEdits(
  messages: readonly unknown[],
  config: ContextManagement,
  measure: { total: number; tokens: (chars: number) => number },
): EditedMessages {
  let out = [...messages];
  let total = measure.total;
  const applied: AppliedEdit[] = [];
  let compactEdit: CompactEdit | undefined;
  for (const edit of config.edits ?? []) {
    if (edit.type === 'clear_thinking_20251015') {
      const done = clearThinkingTurns(out, edit, measure.tokens);
      if (!done) continue;
      out = done.messages;
      total -= done.edit.cleared_input_tokens;
      applied.push(done.edit);
    } else if (edit.type === 'clear_tool_uses_20250919') {
      const done = clearToolResults(out, edit, total, measure.tokens);
      if (!done) continue;
      out = done.messages;
      total -= done.edit.cleared_input_tokens;
      applied.push(done.edit);
    } else if (total > (edit.trigger?.value ?? COMPACT_TRIGGER)) {
      compactEdit = edit;
    }
  }
  return compactEdit ? { messages: out, applied, compact: compactEdit } : { messages: out, applied };
}

const chars = (v: unknown): number => JSON.stringify(v ?? '').length;
const blocksOf = (m: unknown): unknown[] | undefined =>
  isObj(m) && Array.isArray(m.content) ? (m.content as unknown[]) : undefined;

function clearThinkingTurns(
  messages: unknown[],
  edit: z.infer<typeof clearThinking>,
  tokens: (chars: number) => number,
): { messages: unknown[]; edit: AppliedEdit } | undefined {
  const keep =
    edit.keep === undefined
      ? 1
      : edit.keep === 'all' || edit.keep.type === 'all'
        ? Infinity
        : edit.keep.value;
  const turns = messages
    .map((m, i) => ({ m, i }))
    .filter(({ m }) => isObj(m) && m.role === 'assistant' && blocksOf(m)?.some(isThinking));
  const cleared = turns.slice(0, Math.max(0, turns.length - keep));
  if (cleared.length === 0) return undefined;
  const out = [...messages];
  let removed = 0;
  for (const { m, i } of cleared) {
    const blocks = blocksOf(m)!;
    removed += blocks.filter(isThinking).reduce<number>((n, b) => n + chars(b), 0);
    out[i] = { ...(m as Obj), content: blocks.filter((b) => !isThinking(b)) };
  }
  return {
    messages: out,
    edit: {
      type: 'clear_thinking_20251015',
      cleared_thinking_turns: cleared.length,
      cleared_input_tokens: tokens(removed),
    },
  };
}

const isThinking = (b: unknown): boolean =>
  isObj(b) && (b.type === 'thinking' || b.type === 'redacted_thinking');

function clearToolResults(
  messages: unknown[],
  edit: z.infer<typeof clearToolUses>,
  total: number,
  tokens: (chars: number) => number,
): { messages: unknown[]; edit: AppliedEdit } | undefined {
  // Each tool_use with the tool_result that answers it, oldest first.
  const calls = new Map<string, { name: string; input: number }>();
  const uses: ToolUse[] = [];
  for (const m of messages)
    for (const b of blocksOf(m) ?? []) {
      if (!isObj(b)) continue;
      if (b.type === 'tool_use' && typeof b.id === 'string')
        calls.set(b.id, { name: typeof b.name === 'string' ? b.name : '', input: tokens(chars(b.input)) });
      if (b.type === 'tool_result' && typeof b.tool_use_id === 'string') {
        const call = calls.get(b.tool_use_id);
        if (call)
          uses.push({
            key: b.tool_use_id,
            name: call.name,
            resultTokens: tokens(chars(b.content)),
            inputTokens: call.input,
          });
      }
    }
  const trigger = edit.trigger ?? { type: 'input_tokens', value: CLEAR_TOOL_USES_TRIGGER };
  if ((trigger.type === 'input_tokens' ? total : uses.length) <= trigger.value) return undefined;
  const plan = planToolClearing(uses, {
    keep: edit.keep?.value ?? CLEAR_TOOL_USES_KEEP,
    excludeTools: edit.exclude_tools ?? [],
    clearInputs: edit.clear_tool_inputs ?? false,
    atLeast: edit.clear_at_least?.value,
    pointerTokens: tokens(TOOL_POINTER_MAX_CHARS),
  });
  if (!plan) return undefined;
  const results = new Map(uses.filter((u) => plan.results.includes(u.key)).map((u) => [u.key, u]));
  const inputs = new Set(plan.inputs);
  const out = messages.map((m) => {
    const blocks = blocksOf(m);
    if (!blocks) return m;
    let changed = false;
    const content = blocks.map((b) => {
      if (!isObj(b)) return b;
      const use =
        b.type === 'tool_result' && typeof b.tool_use_id === 'string'
          ? results.get(b.tool_use_id)
          : undefined;
      if (use) {
        changed = true;
        return { ...b, content: toolResultPointer({ tool: use.name, tokens: use.resultTokens }) };
      }
      if (b.type === 'tool_use' && typeof b.id === 'string' && inputs.has(b.id)) {
        changed = true;
        return { ...b, input: {} };
      }
      return b;
    });
    return changed ? { ...(m as Obj), content } : m;
  });
  return {
    messages: out,
    edit: {
      type: 'clear_tool_uses_20250919',
      cleared_tool_uses: plan.results.length,
      cleared_input_tokens: plan.tokens,
    },
  };
}
