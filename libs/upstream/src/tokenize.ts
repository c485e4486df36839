import type { HeaderMap } from './headers';
import type { UpstreamClient } from './upstream-client';

/**
 * Exact prompt tokens from the upstream's own tokenizer, or undefined (the caller keeps its estimate) on any
 * failure or after `timeoutMs` in all.
 *
 * vLLM's `POST /tokenize` takes the chat `messages`, applies the chat template and answers `{count}`.
 * llama.cpp's takes `content` and answers `{tokens}` for that text alone, without the template's role markers, so
 * for chat it undercounts (a 62-message conversation: 4,605 tokens against the server's own 5,638; docs/WORKS_WITH.md).
 * When the answer is llama.cpp's shape, the messages are first rendered with its `POST /apply-template` and that
 * prompt is tokenized; if that endpoint is missing, the flat count is the best available.
 */
export async function tokenizeCount(
  client: UpstreamClient,
  opts: { model: string; messages: unknown[]; flatText: string; headers: HeaderMap; timeoutMs: number },
): Promise<number | undefined> {
  const signal = AbortSignal.timeout(Math.max(1, opts.timeoutMs));
  const post = async (path: string, body: unknown): Promise<Record<string, unknown> | undefined> => {
    const res = await client.json({
      method: 'POST',
      path,
      headers: { ...opts.headers, 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify(body)),
      signal,
      timeoutMs: opts.timeoutMs,
      maxBytes: 16 * 1024 * 1024,
    });
    return res.status === 200 && typeof res.body === 'object' && res.body !== null
      ? (res.body as Record<string, unknown>)
      : undefined;
  };
  try {
    const first = await post('/tokenize', {
      model: opts.model,
      messages: opts.messages,
      content: opts.flatText,
    });
    if (!first) return undefined;
    if (typeof first.count === 'number') return first.count;
    if (!Array.isArray(first.tokens)) return undefined;
    const rendered = await post('/apply-template', { messages: opts.messages }).catch(() => undefined);
    if (typeof rendered?.prompt !== 'string') return first.tokens.length;
    const templated = await post('/tokenize', { content: rendered.prompt });
    return Array.isArray(templated?.tokens) ? templated.tokens.length : first.tokens.length;
  } catch {
    // Timed out or refused: an exact count is an optimisation, the estimate stands (count_source stays estimate).
    return undefined;
  }
}
