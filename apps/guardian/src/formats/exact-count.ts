import type { HeaderMap, UpstreamClient } from '@guardian/upstream';

import type { FormatAdapter, ParsedConversation } from './format-adapter';

export interface ExactCountIo {
  upstream: UpstreamClient;
  /** The upstream base path (`/v1`), which the adapter's path goes under. */
  basePath: string;
  /** Credentials only (pickAuth): the count endpoint needs the client's key like any other call. */
  headers: HeaderMap;
  timeoutMs: number;
}

/**
 * Asks the upstream for the exact prompt tokens of `conv` through the adapter's count endpoint. Undefined when the
 * format has none, on any failure and after `timeoutMs`: an exact count is an optimisation and the caller keeps its
 * estimate (issue 5: "exact via the upstream's /v1/messages/count_tokens when it has one").
 */
export async function countExactly(
  adapter: FormatAdapter,
  conv: ParsedConversation,
  io: ExactCountIo,
): Promise<number | undefined> {
  const exact = adapter.exactCount;
  if (!exact) return undefined;
  const { path, body } = exact.request(conv);
  try {
    const res = await io.upstream.json({
      method: 'POST',
      path: `${io.basePath}${path}`,
      headers: { ...io.headers, 'content-type': 'application/json', accept: 'application/json' },
      body: Buffer.from(JSON.stringify(body)),
      signal: AbortSignal.timeout(Math.max(1, io.timeoutMs)),
      timeoutMs: io.timeoutMs,
      maxBytes: 64 * 1024,
    });
    return res.status === 200 ? exact.read(res.body) : undefined;
  } catch {
    // Timed out, refused or unreachable: the estimate stands (count_source stays estimate), as for /tokenize.
    return undefined;
  }
}
