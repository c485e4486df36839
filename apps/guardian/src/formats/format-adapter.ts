import { canonicalDigest, prefixHashes, type NeutralMessage, type SummaryPrompt } from '@guardian/compaction';

import type { Range } from './json-outline';
import type { OwnedRoute } from './owned-route';

export type Json = Record<string, unknown>;

/** One parsed request: the engine's neutral messages plus what the adapter needs to rebuild the original shape. */
export interface ParsedConversation {
  route: OwnedRoute;
  model: string;
  stream: boolean;
  messages: NeutralMessage[];
  /** The original items, index for index with `messages`. */
  items: unknown[];
  /** Characters every request carries outside the messages (tools array, top-level system or instructions). */
  fixedChars: number;
  json: Json;
  /** Where the request's bytes are, when it was read by ConversationReader (ADR 0013). */
  raw?: RawConversation;
  /**
   * Prefix hashes already had for the leading messages this request resent (ConversationReader); extended in place by
   * conversationPrefixHashes, so the next turn has them too.
   */
  prefix?: string[];
}

/** Where a parsed request's bytes are, so what is sent on can reuse them instead of serialising again (ADR 0013). */
export interface RawConversation {
  body: Buffer;
  /** The items array, brackets included. */
  array: Range;
  /** Each item, index for index with `messages`. */
  items: Range[];
  fields: Map<string, Range>;
}

/** How to rebuild a request: which items to keep, the summary block to place, texts to replace (spill). */
export interface RebuildPlan {
  keep: number[];
  summaryBlock?: string;
  replaceText?: ReadonlyMap<number, string>;
  /** Messages whose tool results (only those: the calls and any other block stay) become this pointer text. */
  replaceResults?: ReadonlyMap<number, string>;
}

/** What usage and tool calls an upstream answer reported, read as it streams past. */
export interface ObservedAnswer {
  promptTokens?: number;
  /** The completion (output) tokens the answer's usage reported. */
  completionTokens?: number;
  toolNames: string[];
}

/**
 * One wire format. Adapters live at the edge so the engine stays format-neutral (issue 5): they parse a request into
 * neutral messages, rebuild it around a cut, shape the summariser call, and read usage from answers.
 */
export interface FormatAdapter {
  readonly route: OwnedRoute;
  /** The top-level member that holds the conversation's items. */
  readonly itemsKey: 'messages' | 'input';
  /** Undefined when the request is not one the engine understands: it then passes through unchanged. */
  parse(json: unknown, opts: { countTools: boolean }): ParsedConversation | undefined;
  /**
   * One item as the engine sees it, or undefined for an item it must not compact around (the request then passes
   * through). A function of the item alone, so a message a client sends again can be read once (ConversationReader).
   */
  readItem(item: unknown): NeutralMessage | undefined;
  /** The request around its items: model, fixed characters, what makes it one the engine does not take. */
  readRequest(
    json: Json,
    items: unknown[],
    messages: NeutralMessage[],
    opts: { countTools: boolean },
  ): ParsedConversation | undefined;
  rebuild(conv: ParsedConversation, plan: RebuildPlan): Json;
  /** Path under the upstream base (after `/v1`) and body of a summariser call in this format. */
  summariserCall(
    model: string,
    prompt: SummaryPrompt,
    opts: { maxTokens: number; reasoningEffort?: string },
  ): { path: string; body: Json };
  summaryText(answer: unknown): string | undefined;
  /** Reads one parsed JSON answer or one SSE event's data. */
  observe(payload: unknown, into: ObservedAnswer): void;
  /** The upstream endpoint that counts a request of this format exactly, when the format's API has one. */
  readonly exactCount?: ExactCount;
}

/**
 * An exact-count endpoint, described without doing I/O (the caller sends it: see `countExactly`). Anthropic has
 * `POST /v1/messages/count_tokens`; chat counts through the backend's `/tokenize` instead (libs/upstream).
 */
export interface ExactCount {
  /** Path under the upstream base (after `/v1`) and the body that asks for the count of this request. */
  request(conv: ParsedConversation): { path: string; body: Json };
  /** The prompt tokens the endpoint answered; undefined when the answer is not a count. */
  read(answer: unknown): number | undefined;
}

/** An adapter's `parse`: each item through `readItem`, then the request through `readRequest`. */
export function parseWith(
  adapter: Pick<FormatAdapter, 'itemsKey' | 'readItem' | 'readRequest'>,
  json: unknown,
  opts: { countTools: boolean },
): ParsedConversation | undefined {
  if (!isObject(json)) return undefined;
  const items = json[adapter.itemsKey];
  if (!Array.isArray(items)) return undefined;
  const messages: NeutralMessage[] = [];
  for (const item of items as unknown[]) {
    const m = adapter.readItem(item);
    if (!m) return undefined;
    messages.push(m);
  }
  return adapter.readRequest(json, items as unknown[], messages, opts);
}

/** Characters an image costs in the estimate: about 800 tokens, the order of a mid-size image on current models. */
export const IMAGE_CHARS = 2800;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/**
 * Fills each message's digest from its original item. Done only when a request is over budget (the memo needs
 * prefix hashes then), so a request that fits costs no hashing. Canonical JSON: key order never splits a conversation.
 */
export function fillDigests(conv: ParsedConversation): void {
  const { messages, items } = conv;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (!m.digest) m.digest = canonicalDigest(items[i]);
  }
}

export function jsonChars(v: unknown): number {
  return v === undefined ? 0 : (JSON.stringify(v) ?? '').length;
}

/** Drops a reasoning model's `<think>...</think>` preamble from a summary. */
export function stripThinking(text: string): string {
  return text.replace(/<think>[\s\S]*?<\/think>/gi, '').trim();
}

/** Text, estimate characters and spillability of OpenAI-style content: a string or typed parts. */
export interface PartsRead {
  text: string;
  chars: number;
  /** Text only (a string, or text parts only): the big-paste spill may cut it (to one text part). */
  spillable: boolean;
}

/**
 * Reads content that is a string or an array of typed parts (chat `text`/`image_url`, Responses
 * `input_text`/`output_text`/`input_image`/`input_file`). Unknown parts count by their JSON size.
 */
export function readParts(
  content: unknown,
  kinds: { text: readonly string[]; image: readonly string[] },
): PartsRead {
  if (typeof content === 'string') return { text: content, chars: content.length, spillable: true };
  if (!Array.isArray(content)) return { text: '', chars: jsonChars(content), spillable: false };
  const texts: string[] = [];
  let chars = 0;
  let others = 0;
  for (const part of content) {
    const type = isObject(part) ? str(part.type) : '';
    if (isObject(part) && kinds.text.includes(type)) {
      texts.push(str(part.text));
      chars += str(part.text).length;
    } else {
      others += 1;
      chars += kinds.image.includes(type) ? IMAGE_CHARS : jsonChars(part);
    }
  }
  return { text: texts.join('\n'), chars, spillable: others === 0 && texts.length > 0 };
}

/** The prefix hashes of a conversation, extending those its reader already had for the items it resent. */
export function conversationPrefixHashes(conv: ParsedConversation): string[] {
  fillDigests(conv);
  const hashes = prefixHashes(conv.messages, conv.prefix ?? []);
  // The reader's slot holds the same array: the next turn reuses what was computed here.
  if (conv.prefix) for (let i = conv.prefix.length; i < hashes.length; i += 1) conv.prefix.push(hashes[i]!);
  return hashes;
}

/**
 * A rebuilt request as bytes: what JSON.stringify would give, except that each top-level member the rebuild left as
 * the client sent it, and each item it kept unchanged, is copied from the client's bytes instead of serialised again
 * (ADR 0013). Without the raw bytes (a body read by JSON.parse), it is JSON.stringify.
 */
export function requestBytes(json: Json, conv: ParsedConversation, itemsKey: string): Buffer {
  const raw = conv.raw;
  if (!raw) return Buffer.from(JSON.stringify(json));
  // Pieces first (text to encode, or a range of the client's bytes), then one buffer of the total size: a Buffer per
  // comma was most of what writing a kept tail of a hundred messages cost.
  const parts: (string | Range)[] = ['{'];
  let first = true;
  for (const key of Object.keys(json)) {
    const value = json[key];
    if (value === undefined) continue;
    parts.push(`${first ? '' : ','}${JSON.stringify(key)}:`);
    first = false;
    const range = raw.fields.get(key);
    if (key === itemsKey && Array.isArray(value)) itemParts(value, conv.items, raw.items, parts);
    else if (range && value === conv.json[key]) parts.push(range);
    else parts.push(JSON.stringify(value) ?? 'null');
  }
  parts.push('}');
  let size = 0;
  for (const part of parts)
    size += typeof part === 'string' ? Buffer.byteLength(part) : part.end - part.start;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const part of parts) {
    if (typeof part === 'string') at += out.write(part, at);
    else at += raw.body.copy(out, at, part.start, part.end);
  }
  return out;
}

/**
 * The items array's pieces: an item kept unchanged is the client's bytes, and a run of them that sat side by side
 * (one comma between) is one range, so the kept tail is one copy rather than one per item (issue 16). Kept items come
 * in the client's order, so each is looked for from where the last one was found.
 */
function itemParts(
  value: readonly unknown[],
  items: readonly unknown[],
  ranges: readonly Range[],
  parts: (string | Range)[],
): void {
  parts.push('[');
  let next = 0;
  let open: Range | undefined;
  let openEnd = -1;
  for (let k = 0; k < value.length; k += 1) {
    const item = value[k];
    let found = -1;
    if (typeof item === 'object' && item !== null)
      for (let j = next; j < items.length; j += 1)
        if (items[j] === item) {
          found = j;
          break;
        }
    const r = found === -1 ? undefined : ranges[found];
    if (r && open && found === openEnd + 1 && r.start === open.end + 1) {
      // The next item of the run: the byte between is the comma the client wrote.
      open.end = r.end;
      openEnd = found;
      next = found + 1;
      continue;
    }
    if (open) parts.push(open);
    open = undefined;
    if (k > 0) parts.push(',');
    if (r) {
      open = { start: r.start, end: r.end };
      openEnd = found;
      next = found + 1;
    } else parts.push(JSON.stringify(item) ?? 'null');
  }
  if (open) parts.push(open);
  parts.push(']');
}
