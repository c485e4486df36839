import type { NeutralMessage } from '@guardian/compaction';

import {
  IMAGE_CHARS,
  isObject,
  jsonChars,
  str,
  stripThinking,
  type FormatAdapter,
  type Json,
  type ParsedConversation,
} from './format-adapter';

function readParts(content: unknown): { text: string; chars: number; spillable: boolean } {
  if (typeof content === 'string') return { text: content, chars: content.length, spillable: true };
  if (!Array.isArray(content)) return { text: '', chars: jsonChars(content), spillable: false };
  const texts: string[] = [];
  let chars = 0;
  let others = 0;
  for (const p of content) {
    if (isObject(p) && (p.type === 'input_text' || p.type === 'output_text' || p.type === 'text')) {
      texts.push(str(p.text));
      chars += str(p.text).length;
    } else if (isObject(p) && (p.type === 'input_image' || p.type === 'input_file')) {
      others += 1;
      chars += IMAGE_CHARS;
    } else {
      others += 1;
      chars += jsonChars(p);
    }
  }
  return { text: texts.join('\n'), chars, spillable: others === 0 && texts.length === 1 };
}

/**
 * OpenAI `/v1/responses`, stateless requests only (an `input` array, no `previous_response_id`): a stateful request
 * refers to history guardian never saw, so it passes through. function_call pairs with function_call_output by
 * `call_id`; reasoning items are assistant-side and so never start a kept tail. Summary placement: a `developer`
 * message item at the start of `input`; `instructions` untouched (CONTRACTS §3).
 */
export const responsesAdapter: FormatAdapter = {
  route: 'responses',

  parse(json, { countTools }) {
    if (!isObject(json) || !Array.isArray(json.input) || typeof json.model !== 'string') return undefined;
    if (json.previous_response_id !== undefined && json.previous_response_id !== null) return undefined;
    const messages: NeutralMessage[] = [];
    for (const item of json.input) {
      if (!isObject(item)) return undefined;
      const type = typeof item.type === 'string' ? item.type : 'message';
      let m: Omit<NeutralMessage, 'digest'>;
      if (type === 'message') {
        const parts = readParts(item.content);
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
        m = {
          role,
          text: parts.text,
          chars: parts.chars,
          callIds: [],
          resultIds: [],
          toolCalls: [],
          userTyped: role === 'user',
          spillable: parts.spillable,
        };
      } else if (type === 'function_call' || type === 'custom_tool_call') {
        const args = str(item.arguments) || str(item.input);
        m = {
          role: 'assistant',
          text: '',
          chars: str(item.name).length + args.length,
          callIds: [str(item.call_id)],
          resultIds: [],
          toolCalls: [{ name: str(item.name), args }],
          userTyped: false,
          spillable: false,
        };
      } else if (type === 'function_call_output' || type === 'custom_tool_call_output') {
        const out = typeof item.output === 'string' ? item.output : JSON.stringify(item.output ?? '');
        m = {
          role: 'tool',
          text: out,
          chars: out.length,
          callIds: [],
          resultIds: [str(item.call_id)],
          toolCalls: [],
          userTyped: false,
          spillable: false,
        };
      } else if (type === 'reasoning') {
        m = {
          role: 'assistant',
          text: '',
          chars: jsonChars(item.summary) + str(item.encrypted_content).length,
          callIds: [],
          resultIds: [],
          toolCalls: [],
          userTyped: false,
          spillable: false,
        };
      } else {
        // Unknown item kinds (web_search_call, item_reference, ...): kept as they came, on the assistant side.
        m = {
          role: 'assistant',
          text: '',
          chars: jsonChars(item),
          callIds: [],
          resultIds: [],
          toolCalls: [],
          userTyped: false,
          spillable: false,
        };
      }
      messages.push({
        ...m,
        callIds: m.callIds.filter(Boolean),
        resultIds: m.resultIds.filter(Boolean),
        digest: '',
      });
    }
    const conv: ParsedConversation = {
      route: 'responses',
      model: json.model,
      stream: json.stream === true,
      messages,
      items: json.input as unknown[],
      fixedChars: str(json.instructions).length + (countTools ? jsonChars(json.tools) : 0),
      json,
    };
    return conv;
  },

  rebuild(conv, plan) {
    const input: unknown[] = plan.keep.map((i) => {
      const item = conv.items[i];
      const text = plan.replaceText?.get(i);
      if (text === undefined || !isObject(item)) return item;
      if (typeof item.content === 'string') return { ...item, content: text };
      const partType = item.role === 'assistant' ? 'output_text' : 'input_text';
      return { ...item, content: [{ type: partType, text }] };
    });
    if (plan.summaryBlock !== undefined) {
      input.unshift({
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
    const items = Array.isArray(response.output)
      ? response.output
      : isObject(payload.item)
        ? [payload.item]
        : [];
    for (const it of items)
      if (isObject(it) && it.type === 'function_call' && typeof it.name === 'string')
        into.toolNames.push(it.name);
  },
};
