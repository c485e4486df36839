import type { HeaderMap } from './headers';
import type { UpstreamClient } from './upstream-client';

/**
 * Exact prompt tokens from the upstream's own tokenizer. vLLM's `POST /tokenize` takes the chat `messages` and
 * applies the chat template (`{count}`); llama.cpp's takes `content` (`{tokens}`) and is used with the flattened
 * text. Undefined on any failure or after `timeoutMs`: the caller keeps its estimate.
 */
export async function tokenizeCount(
  client: UpstreamClient,
  opts: { model: string; messages: unknown[]; flatText: string; headers: HeaderMap; timeoutMs: number },
): Promise<number | undefined> {
  const abort = AbortSignal.timeout(Math.max(1, opts.timeoutMs));
  try {
    const res = await client.json({
      method: 'POST',
      path: '/tokenize',
      headers: { ...opts.headers, 'content-type': 'application/json' },
      body: Buffer.from(
        JSON.stringify({ model: opts.model, messages: opts.messages, content: opts.flatText }),
      ),
      signal: abort,
      timeoutMs: opts.timeoutMs,
      maxBytes: 16 * 1024 * 1024,
    });
    if (res.status !== 200 || typeof res.body !== 'object' || res.body === null) return undefined;
    const body = res.body as { count?: unknown; tokens?: unknown };
    if (typeof body.count === 'number') return body.count;
    if (Array.isArray(body.tokens)) return body.tokens.length;
    return undefined;
  } catch {
    // Timed out or refused: an exact count is an optimisation, the estimate stands (count_source stays estimate).
    return undefined;
  }
}
