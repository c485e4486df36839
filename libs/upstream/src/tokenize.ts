import type { HeaderMap } from './headers';
import { readBounded, type UpstreamClient } from './upstream-client';

/** `{"count": N` at the start of a tokenize answer (vLLM's shape). */
const COUNT_AT_HEAD = /^\s*\{\s*"count"\s*:\s*(\d+)\s*[,}]/;

/**
 * A JSON object as bytes, with `messages` and `tools` copied from the client's own JSON when given (the same
 * values: they were parsed from those bytes) instead of serialised again.
 */
function jsonWithRaw(
  body: Record<string, unknown>,
  raw: { messages: Buffer; tools?: Buffer } | undefined,
): Buffer {
  if (!raw) return Buffer.from(JSON.stringify(body));
  const parts: Buffer[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (value === undefined) continue;
    parts.push(Buffer.from(`${parts.length === 0 ? '{' : ','}${JSON.stringify(key)}:`));
    const bytes = key === 'messages' ? raw.messages : key === 'tools' ? raw.tools : undefined;
    parts.push(bytes ?? Buffer.from(JSON.stringify(value)));
  }
  parts.push(Buffer.from(parts.length === 0 ? '{}' : '}'));
  return Buffer.concat(parts);
}

/** An exact count, and whether the tools in it had to be estimated (the route could not take them). */
export interface TokenizeResult {
  tokens: number;
  toolsEstimated: boolean;
}

/**
 * Exact prompt tokens from the upstream's own tokenizer, or undefined (the caller keeps its estimate) on any
 * failure or after `timeoutMs` in all.
 *
 * vLLM's `POST /tokenize` takes the chat `messages` and `tools`, applies the chat template (which renders the tools)
 * and answers `{count}`: without `tools`, Qwen Code's 11 tools went uncounted (39,448 against a real 48,153).
 * llama.cpp's takes `content` and answers `{tokens}` for that text alone, without the template's role markers, so
 * for chat it undercounts (a 62-message conversation: 4,605 tokens against the server's own 5,638; docs/WORKS_WITH.md).
 * When the answer is llama.cpp's shape, the messages (and tools) are first rendered with its `POST /apply-template`
 * and that prompt is tokenized. Where a route cannot take the tools (an older vLLM refuses the field, or llama.cpp
 * has no /apply-template), the count is of the messages and `toolTokens`, the estimate, is added.
 */
export async function tokenizeCount(
  client: UpstreamClient,
  opts: {
    model: string;
    messages: unknown[];
    /** The same messages (and tools) as the client sent their JSON: sent as they are instead of serialised again. */
    raw?: { messages: Buffer; tools?: Buffer };
    flatText: string;
    /** The request's `tools`, when it has any and they count. */
    tools?: unknown;
    /** The estimate of those tools, added where the route could not count them. */
    toolTokens?: number;
    headers: HeaderMap;
    timeoutMs: number;
  },
): Promise<TokenizeResult | undefined> {
  const signal = AbortSignal.timeout(Math.max(1, opts.timeoutMs));
  const post = async (
    path: string,
    body: Record<string, unknown>,
  ): Promise<{ status: number; body?: Record<string, unknown> }> => {
    const res = await client.request({
      method: 'POST',
      path,
      headers: { ...opts.headers, 'content-type': 'application/json' },
      body: jsonWithRaw(body, opts.raw),
      signal,
      timeoutMs: opts.timeoutMs,
    });
    const text = await readBounded(res.body, 16 * 1024 * 1024);
    if (res.status !== 200) return { status: res.status };
    // vLLM answers {count, max_model_len, tokens: [every token id]}: the count is read from the head, so a 128k-token
    // request's answer is not parsed whole (ADR 0013).
    const count = COUNT_AT_HEAD.exec(text.slice(0, 256));
    if (count) return { status: 200, body: { count: Number(count[1]) } };
    try {
      const parsed: unknown = JSON.parse(text);
      const ok = typeof parsed === 'object' && parsed !== null;
      return { status: res.status, body: ok ? (parsed as Record<string, unknown>) : undefined };
    } catch {
      // Not JSON: no count in it; the caller keeps its estimate.
      return { status: res.status };
    }
  };
  const hasTools = opts.tools !== undefined;
  const withTools = (n: number): TokenizeResult => ({ tokens: n, toolsEstimated: false });
  const estimatedTools = (n: number): TokenizeResult =>
    hasTools ? { tokens: n + (opts.toolTokens ?? 0), toolsEstimated: true } : withTools(n);
  try {
    const base = { model: opts.model, messages: opts.messages, content: opts.flatText };
    let first = await post('/tokenize', hasTools ? { ...base, tools: opts.tools } : base);
    let toolsCounted = hasTools;
    if (!first.body && hasTools && first.status >= 400 && first.status < 500) {
      // A tokenizer that does not know `tools` refuses the field: count the messages, estimate the tools.
      first = await post('/tokenize', base);
      toolsCounted = false;
    }
    const answer = first.body;
    if (!answer) return undefined;
    if (typeof answer.count === 'number')
      return toolsCounted ? withTools(answer.count) : estimatedTools(answer.count);
    if (!Array.isArray(answer.tokens)) return undefined;
    const rendered = await post(
      '/apply-template',
      hasTools ? { messages: opts.messages, tools: opts.tools } : { messages: opts.messages },
    ).catch(() => undefined);
    const prompt = rendered?.body?.prompt;
    if (typeof prompt !== 'string') return estimatedTools(answer.tokens.length);
    const templated = await post('/tokenize', { content: prompt });
    const tokens = templated.body?.tokens;
    return Array.isArray(tokens) ? withTools(tokens.length) : estimatedTools(answer.tokens.length);
  } catch {
    // Timed out or refused: an exact count is an optimisation, the estimate stands (count_source stays estimate).
    return undefined;
  }
}
