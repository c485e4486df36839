import { LruMap } from '@guardian/collections';

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

/**
 * What an upstream's tokenizer turned out to be, per model, once it answered: vLLM's (`count`, and whether it takes
 * `tools`) or llama.cpp's (`template`: /apply-template, then the prompt tokenized). Until then every first request
 * carries both shapes (`messages` for vLLM, `content` for llama.cpp); after, only what that tokenizer reads, so a
 * 128k-token conversation is not sent twice over (and its flat text never built) on every count near the budget.
 */
type Learned = { kind: 'count'; tools: boolean } | { kind: 'template' };

/** Models learned per upstream client; a count marks its model as used, the one counted least recently goes first. */
const LEARNED_MODELS = 256;
const learnedByClient = new WeakMap<UpstreamClient, LruMap<string, Learned>>();

function learned(client: UpstreamClient, model: string): Learned | undefined {
  return learnedByClient.get(client)?.get(model);
}

function learn(client: UpstreamClient, model: string, value: Learned | undefined): void {
  let models = learnedByClient.get(client);
  if (!models) learnedByClient.set(client, (models = new LruMap<string, Learned>(LEARNED_MODELS)));
  if (value === undefined) models.delete(model);
  else models.set(model, value);
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
    /** The messages' text, for a tokenizer that reads `content` (llama.cpp); built only when it is sent. */
    flatText: string | (() => string);
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
  const templatedCount = async (): Promise<number | undefined> => {
    const rendered = await post(
      '/apply-template',
      hasTools ? { messages: opts.messages, tools: opts.tools } : { messages: opts.messages },
    ).catch(() => undefined);
    const prompt = rendered?.body?.prompt;
    if (typeof prompt !== 'string') return undefined;
    const tokens = (await post('/tokenize', { content: prompt })).body?.tokens;
    return Array.isArray(tokens) ? tokens.length : undefined;
  };
  const known = learned(client, opts.model);
  try {
    if (known) {
      // Only what this tokenizer reads. An answer of another shape (the upstream was replaced) forgets what was
      // learned: the estimate stands this once, and the next count asks with both shapes again.
      if (known.kind === 'template') {
        const n = await templatedCount();
        if (n === undefined) learn(client, opts.model, undefined);
        return n === undefined ? undefined : withTools(n);
      }
      const vllm = { model: opts.model, messages: opts.messages };
      let toolsSent = hasTools && known.tools;
      let reply = await post('/tokenize', toolsSent ? { ...vllm, tools: opts.tools } : vllm);
      if (!reply.body && toolsSent && reply.status >= 400 && reply.status < 500) {
        // Its first counts had no tools to send: this is where it turns out not to take them.
        reply = await post('/tokenize', vllm);
        toolsSent = false;
        if (typeof reply.body?.count === 'number') learn(client, opts.model, { kind: 'count', tools: false });
      }
      const answer = reply.body;
      if (typeof answer?.count !== 'number') {
        learn(client, opts.model, undefined);
        return undefined;
      }
      return toolsSent || !hasTools ? withTools(answer.count) : estimatedTools(answer.count);
    }
    const flatText = typeof opts.flatText === 'string' ? opts.flatText : opts.flatText();
    const base = { model: opts.model, messages: opts.messages, content: flatText };
    let first = await post('/tokenize', hasTools ? { ...base, tools: opts.tools } : base);
    let toolsCounted = hasTools;
    if (!first.body && hasTools && first.status >= 400 && first.status < 500) {
      // A tokenizer that does not know `tools` refuses the field: count the messages, estimate the tools.
      first = await post('/tokenize', base);
      toolsCounted = false;
    }
    const answer = first.body;
    if (!answer) return undefined;
    if (typeof answer.count === 'number') {
      // Whether it takes tools is known only when there were tools to send; until then it is assumed to.
      learn(client, opts.model, { kind: 'count', tools: toolsCounted || !hasTools });
      return toolsCounted ? withTools(answer.count) : estimatedTools(answer.count);
    }
    if (!Array.isArray(answer.tokens)) return undefined;
    const n = await templatedCount();
    if (n === undefined) return estimatedTools(answer.tokens.length);
    learn(client, opts.model, { kind: 'template' });
    return withTools(n);
  } catch {
    // Timed out or refused: an exact count is an optimisation, the estimate stands (count_source stays estimate).
    return undefined;
  }
}
