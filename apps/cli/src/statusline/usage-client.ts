import { GuardianClient, type UsageAnswer } from '@guardian/client';
import { CodedError } from '@guardian/errors';

// The status line runs on every prompt of the client: the shared client (libs/client) uses node:http only, and the
// reply is checked here by hand rather than with zod, whose load time would be paid on every call.

/** What `/guardian/usage` answers (seed, "Show real usage in your client"). */
export type Usage = UsageAnswer;

export class StatuslineError extends CodedError<'STATUSLINE_BAD_REPLY'> {
  override readonly name = 'StatuslineError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('STATUSLINE_BAD_REPLY', message, options);
  }
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
export async function fetchUsage(req: UsageRequest): Promise<Usage> {
  const client = new GuardianClient({
    url: req.url,
    token: req.token,
    timeoutMs: req.timeoutMs,
    maxReplyBytes: MAX_REPLY_BYTES,
  });
  return parseUsage(await client.usage(req.session));
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
    // An older sidecar sends no session_source: the line does not need it.
    session_source: typeof o.session_source === 'string' ? o.session_source : null,
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
  return new StatuslineError(`unexpected usage reply: ${why}`);
}
