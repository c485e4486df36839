import {
  isObject,
  jsonChars,
  parseWith,
  readParts,
  str,
  stripThinking,
  type FormatAdapter,
  type Json,
  type ObservedAnswer,
  type RebuildPlan,
} from './format-adapter';

const CHAT_PARTS = { text: ['text'], image: ['image_url', 'input_image'] } as const;
const readContent = (content: unknown) => readParts(content, CHAT_PARTS);

/**
 * OpenAI `/v1/chat/completions`. Summary placement: appended to the first system message
 * (ARCHITECTURE.md#compaction).
 */
export const chatAdapter: FormatAdapter = {
  route: 'chat',

  itemsKey: 'messages',

  parse(json, opts) {
    return parseWith(chatAdapter, json, opts);
  },

  readItem(item) {
    if (!isObject(item) || typeof item.role !== 'string') return undefined;
    const content = readContent(item.content);
    const role =
      item.role === 'system' || item.role === 'developer'
        ? 'system'
        : item.role === 'user'
          ? 'user'
          : item.role === 'assistant'
            ? 'assistant'
            : 'tool';
    const calls = Array.isArray(item.tool_calls) ? item.tool_calls.filter(isObject) : [];
    const toolCalls = calls.map((c) => {
      const fn = isObject(c.function) ? c.function : {};
      return { name: str(fn.name), args: str(fn.arguments) };
    });
    const toolChars = toolCalls.reduce((n, c) => n + c.name.length + c.args.length, 0);
    return {
      role,
      text: content.text,
      chars: content.chars + toolChars,
      callIds: calls.map((c) => str(c.id)).filter(Boolean),
      resultIds: role === 'tool' && typeof item.tool_call_id === 'string' ? [item.tool_call_id] : [],
      toolCalls,
      userTyped: role === 'user',
      spillable: content.spillable && calls.length === 0,
      digest: '',
    };
  },

  readRequest(json, items, messages, { countTools }) {
    if (typeof json.model !== 'string') return undefined;
    const fixedChars = countTools ? jsonChars(json.tools) + jsonChars(json.functions) : 0;
    return {
      route: 'chat',
      model: json.model,
      stream: json.stream === true,
      messages,
      items,
      fixedChars,
      json,
    };
  },

  rebuild(conv, plan: RebuildPlan): Json {
    const out: unknown[] = plan.keep.map((i) => {
      const item = conv.items[i];
      const pointer = plan.replaceResults?.get(i);
      if (pointer !== undefined && isObject(item) && item.role === 'tool')
        return { ...item, content: pointer };
      const text = plan.replaceText?.get(i);
      if (text === undefined || !isObject(item)) return item;
      if (typeof item.content === 'string') return { ...item, content: text };
      return { ...item, content: [{ type: 'text', text }] };
    });
    if (plan.summaryBlock !== undefined) {
      // Only the client's LEADING system (or developer) message takes the summary: one from further down (even
      // when eviction moved it to the front) would put the summary of the beginning after what it came after.
      const target = plan.keep[0] === 0 ? out[0] : undefined;
      if (isObject(target) && (target.role === 'system' || target.role === 'developer')) {
        const content = target.content;
        out[0] = {
          ...target,
          content: Array.isArray(content)
            ? [...(content as unknown[]), { type: 'text', text: plan.summaryBlock }]
            : `${str(content)}\n\n${plan.summaryBlock}`,
        };
      } else {
        out.unshift({ role: 'system', content: plan.summaryBlock });
      }
    }
    return { ...conv.json, messages: out };
  },

  summariserCall(model, prompt, { maxTokens, reasoningEffort }) {
    const body: Json = {
      model,
      messages: [
        { role: 'system', content: prompt.system },
        { role: 'user', content: prompt.user },
      ],
      max_tokens: maxTokens,
      temperature: 0.2,
      stream: false,
    };
    if (reasoningEffort) body.reasoning_effort = reasoningEffort;
    return { path: '/chat/completions', body };
  },

  summaryText(answer) {
    if (!isObject(answer) || !Array.isArray(answer.choices)) return undefined;
    const choice: unknown = answer.choices[0];
    if (!isObject(choice) || !isObject(choice.message)) return undefined;
    const text = readContent(choice.message.content).text;
    return stripThinking(text);
  },

  observe(payload, into: ObservedAnswer) {
    if (!isObject(payload)) return;
    if (isObject(payload.usage) && typeof payload.usage.prompt_tokens === 'number')
      into.promptTokens = payload.usage.prompt_tokens;
    if (isObject(payload.usage) && typeof payload.usage.completion_tokens === 'number')
      into.completionTokens = payload.usage.completion_tokens;
    if (!Array.isArray(payload.choices)) return;
    for (const choice of payload.choices) {
      if (!isObject(choice)) continue;
      const msg = isObject(choice.message)
        ? choice.message
        : isObject(choice.delta)
          ? choice.delta
          : undefined;
      if (!msg || !Array.isArray(msg.tool_calls)) continue;
      for (const call of msg.tool_calls) {
        if (isObject(call) && isObject(call.function) && typeof call.function.name === 'string')
          into.toolNames.push(call.function.name);
      }
    }
  },
};
