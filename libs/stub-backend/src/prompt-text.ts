import type { GenerationRoute } from './types';

/**
 * The text of one request, message by message, in the order a model would read it. Both the token count and
 * the summary detection read this, so they always agree about what "the prompt" is.
 */
export interface PromptText {
  /** One entry per message (system/instructions included), each the list of text pieces it carries. */
  messages: { texts: string[]; flatTokens: number }[];
  /** The client's own message count (`messages` / `input` items), which the default reply names. */
  clientMessages: number;
  /** The `tools` array, when the request declares one. */
  tools?: unknown;
}

/** Images and documents cost a flat amount: the stub never decodes them (vLLM and OpenAI also bill per tile). */
const FLAT_ATTACHMENT_TOKENS = 85;

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

class Collector {
  texts: string[] = [];
  flatTokens = 0;

  add(v: unknown): void {
    if (typeof v === 'string' && v.length > 0) this.texts.push(v);
  }

  /** Text fields of a content part, whichever API named them. */
  part(part: unknown): void {
    if (typeof part === 'string') return this.add(part);
    if (!isObj(part)) return;
    const type = str(part.type);
    if (type === 'tool_use') {
      this.add(part.name);
      this.add(JSON.stringify(part.input ?? {}));
    } else if (type === 'tool_result') {
      this.content(part.content);
    } else if (type === 'thinking') {
      this.add(part.thinking);
    } else if (part.text !== undefined) {
      this.add(part.text);
    } else if (type !== undefined && /image|document|audio|file/.test(type)) {
      this.flatTokens += FLAT_ATTACHMENT_TOKENS;
    }
  }

  content(content: unknown): void {
    if (Array.isArray(content)) content.forEach((p) => this.part(p));
    else this.add(content);
  }

  done(): { texts: string[]; flatTokens: number } {
    return { texts: this.texts, flatTokens: this.flatTokens };
  }
}

function chatMessage(m: unknown): { texts: string[]; flatTokens: number } {
  const c = new Collector();
  if (!isObj(m)) return c.done();
  c.content(m.content);
  for (const call of arr(m.tool_calls)) {
    const fn = isObj(call) && isObj(call.function) ? call.function : undefined;
    if (fn) {
      c.add(fn.name);
      c.add(fn.arguments);
    }
  }
  return c.done();
}

function responsesItem(item: unknown): { texts: string[]; flatTokens: number } {
  const c = new Collector();
  if (!isObj(item)) return c.done();
  switch (item.type) {
    case 'function_call':
      c.add(item.name);
      c.add(item.arguments);
      break;
    case 'function_call_output':
      c.content(item.output);
      break;
    case 'reasoning':
      arr(item.summary).forEach((s) => c.part(s));
      break;
    default:
      c.content(item.content);
  }
  return c.done();
}

/** Splits a request body into the text the stub counts, for one generation route. */
export function promptText(json: unknown, route: GenerationRoute): PromptText {
  const body = isObj(json) ? json : {};
  const tools = Array.isArray(body.tools) && body.tools.length > 0 ? body.tools : undefined;
  if (route === 'chat') {
    const msgs = arr(body.messages);
    return { messages: msgs.map(chatMessage), clientMessages: msgs.length, tools };
  }
  if (route === 'messages') {
    const msgs = arr(body.messages);
    const system = new Collector();
    system.content(body.system);
    const head = system.texts.length > 0 ? [system.done()] : [];
    const rest = msgs.map((m) => {
      const c = new Collector();
      if (isObj(m)) c.content(m.content);
      return c.done();
    });
    return { messages: [...head, ...rest], clientMessages: msgs.length, tools };
  }
  const instructions = new Collector();
  instructions.add(body.instructions);
  const head = instructions.texts.length > 0 ? [instructions.done()] : [];
  if (typeof body.input === 'string') {
    return { messages: [...head, { texts: [body.input], flatTokens: 0 }], clientMessages: 1, tools };
  }
  const items = arr(body.input);
  return { messages: [...head, ...items.map(responsesItem)], clientMessages: items.length, tools };
}

/** Every text piece of the prompt, in reading order. */
export function allTexts(prompt: PromptText): string[] {
  return prompt.messages.flatMap((m) => m.texts);
}
