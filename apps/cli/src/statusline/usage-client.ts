import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

import { CodedError } from '@guardian/errors';

// The status line runs on every prompt of the client, so it uses node:http directly: no HTTP library and no
// validator to load (zod is the house validator, but its load time would be paid on every call).

/** What `/guardian/usage` answers (seed, "Show real usage in your client"). */
export interface Usage {
  window: number;
  used_after_compaction: number;
  pct: number;
  count_source: string;
  model: string | null;
  last_compaction_at: string | null;
}

export type StatuslineErrorCode =
  | 'STATUSLINE_BAD_URL'
  | 'STATUSLINE_UNREACHABLE'
  | 'STATUSLINE_TIMEOUT'
  | 'STATUSLINE_HTTP_STATUS'
  | 'STATUSLINE_BAD_REPLY';

export class StatuslineError extends CodedError<StatuslineErrorCode> {
  override readonly name = 'StatuslineError';
}

export interface UsageRequest {
  /** The sidecar's base URL, e.g. http://127.0.0.1:8786. */
  url: string;
  session?: string;
  token?: string;
  timeoutMs: number;
}

// A usage reply is a few hundred bytes; anything far larger is not the sidecar.
const MAX_REPLY_BYTES = 64 * 1024;

/** GETs `<url>/guardian/usage[?session=]` within `timeoutMs` (connect, headers and body together). */
export function fetchUsage(req: UsageRequest): Promise<Usage> {
  const target = usageUrl(req);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (req.token !== undefined) headers['x-guardian-token'] = req.token;
  return new Promise<Usage>((resolve, reject) => {
    const outgoing = send(target, { method: 'GET', headers, agent: false }, (res) => {
      readReply(res).then(resolve, reject);
    });
    // One deadline for connect, headers and body: a slow trickle of bytes must not hold the client's prompt.
    const timer = setTimeout(() => {
      const err = new StatuslineError('STATUSLINE_TIMEOUT', `no reply within ${req.timeoutMs} ms`);
      reject(err);
      outgoing.destroy(err);
    }, req.timeoutMs);
    outgoing.on('close', () => clearTimeout(timer));
    outgoing.on('error', (err) => {
      reject(
        StatuslineError.is(err)
          ? err
          : new StatuslineError('STATUSLINE_UNREACHABLE', err.message, { cause: err }),
      );
    });
    outgoing.end();
  });
}

function usageUrl(req: UsageRequest): URL {
  let base: URL;
  try {
    base = new URL(req.url.endsWith('/') ? req.url : `${req.url}/`);
  } catch (err: unknown) {
    throw new StatuslineError('STATUSLINE_BAD_URL', `not a URL: ${req.url}`, { cause: err });
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new StatuslineError('STATUSLINE_BAD_URL', `not an http(s) URL: ${req.url}`);
  }
  // Relative to the base, so a sidecar behind a path prefix (an ingress at /cg/) still works.
  const target = new URL('guardian/usage', base);
  if (req.session !== undefined) target.searchParams.set('session', req.session);
  return target;
}

function readReply(res: IncomingMessage): Promise<Usage> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REPLY_BYTES) res.destroy(new StatuslineError('STATUSLINE_BAD_REPLY', 'reply too large'));
      else chunks.push(chunk);
    });
    res.on('error', reject);
    res.on('end', () => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 299) {
        reject(new StatuslineError('STATUSLINE_HTTP_STATUS', `sidecar answered ${status}`));
        return;
      }
      try {
        resolve(parseUsage(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
      } catch (err: unknown) {
        reject(
          StatuslineError.is(err)
            ? err
            : new StatuslineError('STATUSLINE_BAD_REPLY', 'reply is not JSON', { cause: err }),
        );
      }
    });
  });
}

/** Checks the reply's shape; throws STATUSLINE_BAD_REPLY when a field the line needs is missing. */
export function parseUsage(body: unknown): Usage {
  if (typeof body !== 'object' || body === null) throw badReply('not an object');
  const o = body as Record<string, unknown>;
  const window = finiteNumber(o.window, 'window');
  if (window <= 0) throw badReply('window is not positive');
  const used = finiteNumber(o.used_after_compaction, 'used_after_compaction');
  const pct = o.pct === undefined || o.pct === null ? (used / window) * 100 : finiteNumber(o.pct, 'pct');
  if (typeof o.count_source !== 'string') throw badReply('count_source is missing');
  return {
    window,
    used_after_compaction: used,
    pct,
    count_source: o.count_source,
    model: typeof o.model === 'string' ? o.model : null,
    last_compaction_at: typeof o.last_compaction_at === 'string' ? o.last_compaction_at : null,
  };
}

function finiteNumber(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw badReply(`${field} is not a count`);
  return value;
}

function badReply(why: string): StatuslineError {
  return new StatuslineError('STATUSLINE_BAD_REPLY', `unexpected usage reply: ${why}`);
}
