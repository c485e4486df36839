import { request } from 'undici';

import { CodedError } from '@guardian/errors';

export type ProxyErrorCode =
  'PROXY_BAD_URL' | 'PROXY_UNREACHABLE' | 'PROXY_TIMEOUT' | 'PROXY_HTTP_STATUS' | 'PROXY_BAD_REPLY';

/** A failed look at the running sidecar, with a stable code (HOUSE rule 4). */
export class ProxyError extends CodedError<ProxyErrorCode> {
  override readonly name = 'ProxyError';
}

// A stats body is a few kilobytes; anything far larger is not the sidecar.
const MAX_REPLY_BYTES = 1024 * 1024;

/**
 * One GET of `<baseUrl>/guardian/stats`, with X-Guardian-Token when a token is configured, within
 * `timeoutMs` for connect, headers and body together (seed: "one loopback HTTP GET ... 3 s").
 */
export async function fetchProxyStats(opts: {
  baseUrl: string;
  token?: string;
  timeoutMs: number;
}): Promise<Record<string, unknown>> {
  let target: URL;
  try {
    target = new URL('guardian/stats', opts.baseUrl.endsWith('/') ? opts.baseUrl : `${opts.baseUrl}/`);
  } catch (cause: unknown) {
    throw new ProxyError('PROXY_BAD_URL', 'GUARDIAN_URL is not a URL', { cause });
  }
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.token !== undefined) headers['x-guardian-token'] = opts.token;
  const signal = AbortSignal.timeout(opts.timeoutMs);
  let text: string;
  let status: number;
  try {
    const res = await request(target, { method: 'GET', headers, signal });
    status = res.statusCode;
    const length = Number(res.headers['content-length'] ?? 0);
    if (length > MAX_REPLY_BYTES) {
      res.body.destroy();
      throw new ProxyError('PROXY_BAD_REPLY', 'stats reply too large');
    }
    text = await res.body.text();
  } catch (cause: unknown) {
    if (cause instanceof ProxyError) throw cause;
    if (signal.aborted) {
      throw new ProxyError('PROXY_TIMEOUT', `no reply from ${target.origin} within ${opts.timeoutMs} ms`, {
        cause,
      });
    }
    throw new ProxyError(
      'PROXY_UNREACHABLE',
      `no proxy at ${target.origin} (start it with context-guardian, or set GUARDIAN_URL / GUARDIAN_PORT)`,
      { cause },
    );
  }
  if (status === 401 || status === 403) {
    throw new ProxyError('PROXY_HTTP_STATUS', `proxy answered ${status}: set GUARDIAN_TOKEN`);
  }
  if (status < 200 || status > 299) throw new ProxyError('PROXY_HTTP_STATUS', `proxy answered ${status}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (cause: unknown) {
    throw new ProxyError('PROXY_BAD_REPLY', 'stats reply is not JSON', { cause });
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ProxyError('PROXY_BAD_REPLY', 'stats reply is not an object');
  }
  return body as Record<string, unknown>;
}
