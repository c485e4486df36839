import { randomBytes } from 'node:crypto';

// The OpenAI Responses shapes guardian answers a compaction with (the `openai` SDK's CompactedResponse,
// ResponseCompactionItem and ResponseStreamEvent types). Written by hand: these few objects are all we emit.

type Obj = Record<string, unknown>;

/** Item types a client sends for a compaction item, ours or another provider's (issue 27 item 1). */
export const COMPACTION_ITEM_TYPES = new Set(['compaction', 'compaction_summary', 'context_compaction']);

export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Instructions, not conversation: a summary never stands for them, so they stay where the client put them. */
export const isInstruction = (item: unknown): boolean =>
  isObj(item) && (item.role === 'system' || item.role === 'developer');

const id = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`;

export interface CompactionUsage {
  inputTokens: number;
  outputTokens: number;
}

function usage(u: CompactionUsage): Obj {
  return {
    input_tokens: u.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: u.inputTokens + u.outputTokens,
  };
}

export function compactionItem(handle: string): Obj {
  return { type: 'compaction', id: id('cmp'), encrypted_content: handle };
}

/** `POST /v1/responses/compact`'s answer: the retained items, then the one compaction item. */
export function compactedResponse(retained: readonly unknown[], handle: string, u: CompactionUsage): Obj {
  return {
    id: id('resp'),
    object: 'response.compaction',
    created_at: Math.floor(Date.now() / 1000),
    output: [...retained, compactionItem(handle)],
    usage: usage(u),
  };
}

/** A `/v1/responses` answer to a trailing `compaction_trigger`: exactly one output item, of type compaction. */
export function triggerResponse(model: string, handle: string, u: CompactionUsage): Obj {
  return {
    id: id('resp'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    model,
    output: [compactionItem(handle)],
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: usage(u),
    error: null,
    incomplete_details: null,
  };
}

/** The same answer as SSE: created, the item added and done, completed (what the SDK's stream and Codex read). */
export function triggerEvents(response: Obj): string {
  const output = (response.output as Obj[])[0]!;
  const inProgress = { ...response, status: 'in_progress', output: [] };
  const events: [string, Obj][] = [
    ['response.created', { response: inProgress }],
    ['response.in_progress', { response: inProgress }],
    ['response.output_item.added', { output_index: 0, item: output }],
    ['response.output_item.done', { output_index: 0, item: output }],
    ['response.completed', { response }],
  ];
  return events
    .map(
      ([type, data], i) =>
        `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: i, ...data })}\n\n`,
    )
    .join('');
}
