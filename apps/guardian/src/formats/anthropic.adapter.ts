import {
  IMAGE_CHARS,
  isObject,
  jsonChars,
  parseWith,
  str,
  stripThinking,
  type FormatAdapter,
  type Json,
} from './format-adapter';

interface BlocksRead {
  text: string;
  typed: string;
  chars: number;
  callIds: string[];
  resultIds: string[];
  toolCalls: { name: string; args: string }[];
  spillable: boolean;
}

/** Reads Anthropic content (a string or blocks). Unknown blocks count by their JSON size and are kept as they came. */
function readBlocks(content: unknown): BlocksRead {
  const r: BlocksRead = {
    text: '',
    typed: '',
    chars: 0,
    callIds: [],
    resultIds: [],
    toolCalls: [],
    spillable: false,
  };
  if (typeof content === 'string')
    return { ...r, text: content, typed: content, chars: content.length, spillable: true };
  if (!Array.isArray(content)) return { ...r, chars: jsonChars(content) };
  const texts: string[] = [];
  const typed: string[] = [];
  let textBlocks = 0;
  for (const block of content) {
    if (!isObject(block)) continue;
    switch (block.type) {
      case 'text':
        texts.push(str(block.text));
        typed.push(str(block.text));
        r.chars += str(block.text).length;
        textBlocks += 1;
        break;
      case 'tool_use': {
        const args = JSON.stringify(block.input ?? {});
        r.callIds.push(str(block.id));
        r.toolCalls.push({ name: str(block.name), args });
        r.chars += str(block.name).length + args.length;
        break;
      }
      case 'tool_result': {
        const inner = readBlocks(block.content);
        r.resultIds.push(str(block.tool_use_id));
        texts.push(`${block.is_error === true ? '[tool error] ' : '[tool result] '}${inner.text}`);
        r.chars += inner.chars + 16;
        break;
      }
      case 'thinking':
        r.chars += str(block.thinking).length;
        break;
      case 'image':
        r.chars += IMAGE_CHARS;
        break;
      case 'document':
        r.chars += documentChars(block);
        break;
      default:
        r.chars += jsonChars(block);
    }
  }
  r.text = texts.join('\n');
  r.typed = typed.join('\n');
  // Text blocks only (Claude Code sends a reminder block and the paste as two): the spill joins them into one.
  r.spillable = textBlocks > 0 && textBlocks === content.length;
  return r;
}

/**
 * A plain-text document is read by the model as its text; a PDF or an image-like source costs about an image per
 * page, which the estimate cannot see, so it takes one image's worth (the exact count corrects it near the budget).
 */
function documentChars(block: Json): number {
  const source = isObject(block.source) ? block.source : {};
  if (source.type === 'text') return str(source.data).length;
  if (source.type === 'content') return readBlocks(source.content).chars;
  return IMAGE_CHARS;
}

/** Top-level `system` (or a system item's content) as text blocks: a string becomes one block, blocks stay. */
function systemBlocks(system: unknown): unknown[] {
  if (Array.isArray(system)) return system as unknown[];
  return typeof system === 'string' && system.length > 0 ? [{ type: 'text', text: system }] : [];
}

/**
 * Fields `POST /v1/messages/count_tokens` accepts (Anthropic API reference, beta Count tokens: messages, model,
 * system, tools, tool_choice, thinking, mcp_servers, context_management, output_config, output_format,
 * cache_control, speed). Generation-only fields (max_tokens, stream, metadata, temperature) are refused there.
 */
const COUNT_FIELDS = [
  'model',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'thinking',
  'mcp_servers',
  'context_management',
  'output_config',
  'output_format',
  'cache_control',
  'speed',
] as const;

/**
 * Anthropic `/v1/messages`. `role: "system"` items in the middle of `messages` (Claude Code's mid-conversation system
 * beta) are kept in order; a tool_use and its tool_result are never split (pairing by id); thinking blocks stay in
 * their message. Summary placement: a text block appended to top-level `system` (ARCHITECTURE.md#compaction).
 */
export const anthropicAdapter: FormatAdapter = {
  route: 'messages',

  itemsKey: 'messages',

  parse(json, opts) {
    return parseWith(anthropicAdapter, json, opts);
  },

  readItem(item) {
    if (!isObject(item) || typeof item.role !== 'string') return undefined;
    const b = readBlocks(item.content);
    const role = item.role === 'system' ? 'system' : item.role === 'assistant' ? 'assistant' : 'user';
    return {
      role,
      text: b.text,
      chars: b.chars,
      callIds: b.callIds.filter(Boolean),
      resultIds: b.resultIds.filter(Boolean),
      toolCalls: b.toolCalls,
      userTyped: role === 'user' && b.resultIds.length === 0,
      spillable: b.spillable,
      digest: '',
    };
  },

  readRequest(json, items, messages, { countTools }) {
    if (typeof json.model !== 'string') return undefined;
    const systemChars = typeof json.system === 'string' ? json.system.length : readBlocks(json.system).chars;
    return {
      route: 'messages',
      model: json.model,
      stream: json.stream === true,
      messages,
      items,
      fixedChars: systemChars + (countTools ? jsonChars(json.tools) : 0),
      json,
    };
  },

  rebuild(conv, plan) {
    const messages = plan.keep.map((i) => {
      const item = conv.items[i];
      const pointer = plan.replaceResults?.get(i);
      if (pointer !== undefined && isObject(item) && Array.isArray(item.content))
        return {
          ...item,
          content: (item.content as unknown[]).map((b) =>
            isObject(b) && b.type === 'tool_result' ? { ...b, content: pointer } : b,
          ),
        };
      const text = plan.replaceText?.get(i);
      if (text === undefined || !isObject(item)) return item;
      if (typeof item.content === 'string') return { ...item, content: text };
      return {
        ...item,
        content: [
          {
            ...(Array.isArray(item.content) && isObject(item.content[0]) ? item.content[0] : {}),
            type: 'text',
            text,
          },
        ],
      };
    });
    const out: Json = { ...conv.json, messages };
    if (plan.summaryBlock !== undefined) {
      // `messages` must start with a user turn (ARCHITECTURE.md#compaction): a mid-conversation system item that
      // eviction left at the front (Claude Code sends one right after the first user message) joins the top-level
      // system text.
      let lead = 0;
      if (plan.keep[0] !== 0)
        while (lead < plan.keep.length && conv.messages[plan.keep[lead]!]?.role === 'system') lead++;
      const moved = messages
        .splice(0, lead)
        .flatMap((item) => systemBlocks(isObject(item) ? item.content : undefined));
      const block = { type: 'text', text: plan.summaryBlock };
      out.system = [...systemBlocks(conv.json.system), ...moved, block];
    }
    return out;
  },

  summariserCall(model, prompt, { maxTokens }) {
    return {
      path: '/messages',
      body: {
        model,
        system: prompt.system,
        messages: [{ role: 'user', content: prompt.user }],
        max_tokens: maxTokens,
        stream: false,
      },
    };
  },

  summaryText(answer) {
    if (!isObject(answer) || !Array.isArray(answer.content)) return undefined;
    const text = answer.content
      .filter((b): b is Json => isObject(b) && b.type === 'text')
      .map((b) => str(b.text))
      .join('\n');
    return stripThinking(text);
  },

  observe(payload, into) {
    if (!isObject(payload)) return;
    const usage = isObject(payload.usage)
      ? payload.usage
      : isObject(payload.message) && isObject(payload.message.usage)
        ? payload.message.usage
        : undefined;
    if (usage && typeof usage.input_tokens === 'number') {
      // Cached prompt tokens still occupy the window.
      const cached =
        (typeof usage.cache_read_input_tokens === 'number' ? usage.cache_read_input_tokens : 0) +
        (typeof usage.cache_creation_input_tokens === 'number' ? usage.cache_creation_input_tokens : 0);
      into.promptTokens = usage.input_tokens + cached;
    }
    // message_start carries a first output count and message_delta the final one (cumulative): the last one read wins.
    if (usage && typeof usage.output_tokens === 'number') into.completionTokens = usage.output_tokens;
    const blocks = Array.isArray(payload.content)
      ? payload.content
      : isObject(payload.content_block)
        ? [payload.content_block]
        : [];
    for (const b of blocks)
      if (isObject(b) && b.type === 'tool_use' && typeof b.name === 'string') into.toolNames.push(b.name);
  },

  exactCount: {
    request(conv) {
      const body: Json = {};
      for (const key of COUNT_FIELDS) if (conv.json[key] !== undefined) body[key] = conv.json[key];
      return { path: '/messages/count_tokens', body };
    },
    read(answer) {
      return isObject(answer) && typeof answer.input_tokens === 'number' ? answer.input_tokens : undefined;
    },
  },
};
