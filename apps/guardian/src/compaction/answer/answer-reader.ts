import { createParser, type EventSourceParser } from 'eventsource-parser';

import type { FormatAdapter, ObservedAnswer } from '../../formats/format-adapter';

/** JSON answers larger than this are not read for usage (they still stream through untouched). */
const MAX_OBSERVED_JSON = 4 * 1024 * 1024;

/**
 * Markers of what an answer tells guardian: usage, and tool calls (a recall tool counts for the receipts). An answer
 * or an SSE event without any is not parsed at all; most of a stream's events are text deltas (ADR 0013).
 */
const TOOL_MARKERS = ['"tool_calls"', '"tool_use"', '"function_call"'];
/**
 * The same, as a JSON answer is searched for them: `_call` (tool_calls, function_call) and `_use` (tool_use), which
 * start with a byte rare in prose, so Buffer#indexOf skips through the answer at memchr speed; a false hit only
 * costs a parse.
 */
const TOOL_MARKER_BYTES = ['_call', '_use'].map((m) => Buffer.from(m));
const USAGE = '"usage"';

/**
 * Reads usage and tool calls from an upstream answer as it streams past, without holding any byte back and without
 * parsing what cannot hold them: a JSON answer's usage is read from its `"usage"` member alone (usually at the tail),
 * and the whole answer is parsed only when it carries a tool call; an SSE event is parsed only when it holds a usage
 * object or a tool call.
 */
export class AnswerReader {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private parser: EventSourceParser | undefined;

  constructor(
    private readonly adapter: FormatAdapter,
    private readonly into: ObservedAnswer,
    private readonly kind: 'json' | 'sse',
  ) {
    if (kind === 'sse')
      this.parser = createParser({
        onEvent: (ev) => {
          const data = ev.data;
          if (!holdsUsage(data) && !TOOL_MARKERS.some((m) => data.includes(m))) return;
          this.read(data);
        },
      });
  }

  /** The reader for an answer of this content type, or undefined when nothing in it is read. */
  static for(adapter: FormatAdapter, into: ObservedAnswer, contentType: string): AnswerReader | undefined {
    if (contentType.includes('text/event-stream')) return new AnswerReader(adapter, into, 'sse');
    if (contentType.includes('json')) return new AnswerReader(adapter, into, 'json');
    return undefined;
  }

  push(chunk: Buffer): void {
    if (this.parser) {
      this.parser.feed(chunk.toString('utf8'));
      return;
    }
    this.size += chunk.length;
    if (this.size <= MAX_OBSERVED_JSON) this.chunks.push(chunk);
  }

  end(): void {
    if (this.kind !== 'json' || this.size > MAX_OBSERVED_JSON) return;
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
    if (TOOL_MARKER_BYTES.some((m) => all.indexOf(m) !== -1)) {
      this.read(all.toString('utf8'));
      return;
    }
    const usage = usageMember(all);
    if (usage !== undefined) this.read(`{"usage":${usage}}`);
  }

  private read(json: string): void {
    try {
      this.adapter.observe(JSON.parse(json), this.into);
    } catch {
      // Not JSON after all: nothing to learn from it; the client gets it as it came.
      return;
    }
  }
}

/** True when the text holds `"usage"` followed by an object (not `"usage":null`, which vLLM sends on every event). */
function holdsUsage(text: string): boolean {
  for (let at = text.indexOf(USAGE); at !== -1; at = text.indexOf(USAGE, at + USAGE.length)) {
    let k = at + USAGE.length;
    while (text[k] === ' ' || text[k] === ':' || text[k] === '\n' || text[k] === '\r' || text[k] === '\t')
      k += 1;
    if (text[k] === '{') return true;
  }
  return false;
}

/**
 * The text of the last top-level-looking `"usage": {...}` member of a JSON answer, found from the end (OpenAI,
 * Anthropic and Responses answers all put usage after the content). A raw `"usage"` with its quotes unescaped can
 * only be a key: inside a JSON string the quotes would be escaped.
 */
export function usageMember(body: Buffer): string | undefined {
  for (let at = body.lastIndexOf(USAGE); at !== -1; at = at > 0 ? body.lastIndexOf(USAGE, at - 1) : -1) {
    let k = at + USAGE.length;
    while (k < body.length && (body[k] === 0x20 || body[k] === 0x0a || body[k] === 0x0d || body[k] === 0x09))
      k += 1;
    if (body[k] !== 0x3a) continue;
    k += 1;
    while (k < body.length && (body[k] === 0x20 || body[k] === 0x0a || body[k] === 0x0d || body[k] === 0x09))
      k += 1;
    if (body[k] !== 0x7b) continue;
    const end = objectEnd(body, k);
    if (end !== -1) return body.toString('utf8', k, end);
  }
  return undefined;
}

/** The index after the object that opens at `start`, honouring strings; -1 when it does not close. */
function objectEnd(body: Buffer, start: number): number {
  let depth = 0;
  for (let k = start; k < body.length; k += 1) {
    const c = body[k];
    if (c === 0x22) {
      // Skip the string: to the next quote no backslash escapes.
      for (k += 1; k < body.length; k += 1) {
        if (body[k] === 0x5c) k += 1;
        else if (body[k] === 0x22) break;
      }
    } else if (c === 0x7b || c === 0x5b) depth += 1;
    else if (c === 0x7d || c === 0x5d) {
      depth -= 1;
      if (depth === 0) return k + 1;
    }
  }
  return -1;
}
