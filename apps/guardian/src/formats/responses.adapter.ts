import type { NeutralMessage } from '@guardian/compaction';

import {
  isObject,
  jsonChars,
  parseWith,
  readParts,
  str,
  stripThinking,
  type FormatAdapter,
  type Json,
} from './format-adapter';

const RESPONSES_PARTS = {
  text: ['input_text', 'output_text', 'text'],
  image: ['input_image', 'input_file'],
} as const;
const readItemParts = (content: unknown) => readParts(content, RESPONSES_PARTS);

type ItemRead = Omit<NeutralMessage, 'digest'>;

const EMPTY: ItemRead = {
  role: 'assistant',
  text: '',
  chars: 0,
  callIds: [],
  resultIds: [],
  toolCalls: [],
  userTyped: false,
  spillable: false,
};

function messageItem(item: Json): ItemRead | undefined {
  const parts = readItemParts(item.content);
  const r = str(item.role);
  const role =
    r === 'system' || r === 'developer'
      ? 'system'
      : r === 'assistant'
        ? 'assistant'
        : r === 'user'
          ? 'user'
          : undefined;
  if (!role) return undefined;
  return {
    ...EMPTY,
    role,
    text: parts.text,
    chars: parts.chars,
    userTyped: role === 'user',
    spillable: parts.spillable,
  };
}

/**
 * One `input` item. Calls and their outputs pair by `call_id` whatever the tool kind (function_call,
 * custom_tool_call, local_shell_call, computer_call, apply_patch_call, shell_call, ...): an item whose type ends
 * in `_output` answers the call with its id, any other item with a `call_id` opens one. Undefined for an item the
 * engine must not compact around: `item_reference` points at server-side state guardian never saw.
 */
function readItem(item: Json): ItemRead | undefined {
  const type = typeof item.type === 'string' ? item.type : 'message';
  if (type === 'message') return messageItem(item);
  if (type === 'item_reference') return undefined;
  const callId = str(item.call_id);
  if (type.endsWith('_output')) {
    const out = typeof item.output === 'string' ? item.output : readItemParts(item.output).text;
    const chars = typeof item.output === 'string' ? out.length : jsonChars(item.output);
    return { ...EMPTY, role: 'tool', text: out, chars, resultIds: callId ? [callId] : [] };
  }
  if (type === 'reasoning') {
    // encrypted_content is opaque but replayed to the model; summary and content (gpt-oss reasoning_text) are read.
    const chars = jsonChars(item.summary) + jsonChars(item.content) + str(item.encrypted_content).length;
    return { ...EMPTY, chars };
  }
  if (callId) {
    const args =
      str(item.arguments) ||
      str(item.input) ||
      (item.action === undefined ? '' : JSON.stringify(item.action));
    const name = str(item.name) || type.replace(/_call$/, '');
    return { ...EMPTY, chars: name.length + args.length, callIds: [callId], toolCalls: [{ name, args }] };
  }
  // Other item kinds (web_search_call, image_generation_call, mcp_list_tools, ...): kept as they came, assistant side.
  return { ...EMPTY, chars: jsonChars(item) };
}

/**
 * OpenAI `/v1/responses`, stateless requests only (an `input` array, no `previous_response_id`): a stateful request
 * refers to history guardian never saw, so it passes through. function_call pairs with function_call_output by
 * `call_id`; reasoning items are assistant-side and so never start a kept tail. Summary placement: a `developer`
 * message item right after the client's leading instruction items (at the start of `input` when there are none);
 * `instructions` untouched (ARCHITECTURE.md#compaction).
 */
export const responsesAdapter: FormatAdapter = {
  route: 'responses',

  itemsKey: 'input',

  parse(json, opts) {
    return parseWith(responsesAdapter, json, opts);
  },

  readItem(item) {
    if (!isObject(item)) return undefined;
    const m = readItem(item);
    return m ? { ...m, digest: '' } : undefined;
  },

  readRequest(json, items, messages, { countTools }) {
    if (typeof json.model !== 'string') return undefined;
    // Stateful requests refer to history guardian never saw: `previous_response_id`, or a Conversations API
    // `conversation` (OpenAI API reference, "Conversation state"). They pass through unchanged.
    if (json.previous_response_id !== undefined && json.previous_response_id !== null) return undefined;
    if (json.conversation !== undefined && json.conversation !== null) return undefined;
    return {
      route: 'responses',
      model: json.model,
      stream: json.stream === true,
      messages,
      items,
      fixedChars: str(json.instructions).length + (countTools ? jsonChars(json.tools) : 0),
      json,
    };
  },

  rebuild(conv, plan) {
    const input: unknown[] = plan.keep.map((i) => {
      const item = conv.items[i];
      const pointer = plan.replaceResults?.get(i);
      if (pointer !== undefined && isObject(item) && 'output' in item) return { ...item, output: pointer };
      const text = plan.replaceText?.get(i);
      if (text === undefined || !isObject(item)) return item;
      if (typeof item.content === 'string') return { ...item, content: text };
      const partType = item.role === 'assistant' ? 'output_text' : 'input_text';
      return { ...item, content: [{ type: partType, text }] };
    });
    if (plan.summaryBlock !== undefined) {
      // After the client's leading instruction items (Codex sends its instructions as developer items, ~19 KB): the
      // block's "instructions above" is then true, and the start of the request stays the same on every turn, which
      // keeps the backend's prefix cache warm (ARCHITECTURE.md#compaction, summary placement and prefix stability).
      let at = 0;
      while (at < plan.keep.length && plan.keep[at] === at && conv.messages[at]?.role === 'system') at++;
      input.splice(at, 0, {
        type: 'message',
        role: 'developer',
        content: [{ type: 'input_text', text: plan.summaryBlock }],
      });
    }
    return { ...conv.json, input };
  },

  summariserCall(model, prompt, { maxTokens, reasoningEffort }) {
    const body: Json = {
      model,
      instructions: prompt.system,
      input: prompt.user,
      max_output_tokens: maxTokens,
      store: false,
      stream: false,
    };
    if (reasoningEffort) body.reasoning = { effort: reasoningEffort };
    return { path: '/responses', body };
  },

  summaryText(answer) {
    if (!isObject(answer)) return undefined;
    if (typeof answer.output_text === 'string') return stripThinking(answer.output_text);
    if (!Array.isArray(answer.output)) return undefined;
    const texts: string[] = [];
    for (const item of answer.output) {
      if (!isObject(item) || item.type !== 'message' || !Array.isArray(item.content)) continue;
      for (const p of item.content) if (isObject(p) && p.type === 'output_text') texts.push(str(p.text));
    }
    return stripThinking(texts.join('\n'));
  },

  observe(payload, into) {
    if (!isObject(payload)) return;
    const response = isObject(payload.response) ? payload.response : payload;
    if (isObject(response.usage) && typeof response.usage.input_tokens === 'number')
      into.promptTokens = response.usage.input_tokens;
    if (isObject(response.usage) && typeof response.usage.output_tokens === 'number')
      into.completionTokens = response.usage.output_tokens;
    // Only the final output list: a stream also announces each item in output_item.added and .done, and reading
    // those too would count one tool call three times.
    const items = Array.isArray(response.output) ? response.output : [];
    for (const it of items)
      if (isObject(it) && it.type === 'function_call' && typeof it.name === 'string')
        into.toolNames.push(it.name);
  },
};
