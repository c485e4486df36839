import type { NeutralMessage } from '@guardian/compaction';

import { isObject, str, type Json, type ParsedConversation } from './format-adapter';

/**
 * A conversation of any route as OpenAI chat `messages` and `tools`, for a backend tokenizer that only reads chat
 * (vLLM's and llama.cpp's `/tokenize` and `/apply-template`): the top-level system or instructions first, then each
 * message's text, an assistant's tool calls as `tool_calls`, a tool result as a `tool` message. vLLM serves
 * `/v1/messages` by turning it into a chat request the same way, so its template renders what this renders.
 */
export function chatForTokenizer(conv: Pick<ParsedConversation, 'messages' | 'json'>): {
  messages: Json[];
  tools?: Json[];
} {
  const messages: Json[] = [];
  const top = topSystem(conv.json);
  if (top !== '') messages.push({ role: 'system', content: top });
  for (const m of conv.messages) messages.push(chatMessage(m));
  const tools = chatTools(conv.json.tools);
  return tools === undefined ? { messages } : { messages, tools };
}

function chatMessage(m: NeutralMessage): Json {
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.resultIds[0] ?? 'call', content: m.text };
  if (m.role === 'assistant' && m.toolCalls.length > 0) {
    return {
      role: 'assistant',
      content: m.text,
      tool_calls: m.toolCalls.map((c, i) => ({
        id: m.callIds[i] ?? `call_${i}`,
        type: 'function',
        function: { name: c.name, arguments: c.args },
      })),
    };
  }
  return { role: m.role, content: m.text };
}

/** Anthropic's top-level `system` (a string or text blocks), or the Responses API's `instructions`. */
function topSystem(json: Json): string {
  const system = json.system;
  if (typeof system === 'string') return system;
  if (Array.isArray(system)) {
    return system
      .filter((b): b is Json => isObject(b) && b.type === 'text')
      .map((b) => str(b.text))
      .join('\n');
  }
  return str(json.instructions);
}

/**
 * Anthropic tools (`name`, `description`, `input_schema`) and Responses function tools (`name`, `parameters` at the
 * top) as chat function tools; a server tool of either API (web search, code execution) has no chat form and is left
 * out. Undefined when none is left.
 */
function chatTools(tools: unknown): Json[] | undefined {
  if (!Array.isArray(tools)) return undefined;
  const out: Json[] = [];
  for (const t of tools) {
    if (!isObject(t) || typeof t.name !== 'string') continue;
    const parameters = t.input_schema ?? t.parameters;
    if (!isObject(parameters)) continue;
    const fn: Json = { name: t.name, parameters };
    if (typeof t.description === 'string') fn.description = t.description;
    out.push({ type: 'function', function: fn });
  }
  return out.length > 0 ? out : undefined;
}
