import { CodedError, codeOf } from '@guardian/errors';

export type UpstreamErrorCode =
  'UPSTREAM_UNREACHABLE' | 'UPSTREAM_TIMEOUT' | 'UPSTREAM_BAD_RESPONSE' | 'UPSTREAM_ABORTED';

/** A failure reaching the upstream, with the status guardian answers in its place (502 or 504). */
export class UpstreamError extends CodedError<UpstreamErrorCode> {
  override readonly name = 'UpstreamError';

  constructor(
    code: UpstreamErrorCode,
    message: string,
    readonly status: number,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);

/** Maps undici and socket errors onto stable codes: a timeout is a 504, anything else that kept us from the upstream a 502. */
export function classifyUpstreamError(err: unknown): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const code = codeOf(err) ?? '';
  const name = err instanceof Error ? err.name : '';
  if (name === 'AbortError' || code === 'UND_ERR_ABORTED') {
    return new UpstreamError(
      'UPSTREAM_ABORTED',
      'the client went away; the upstream request was aborted',
      499,
      {
        cause: err,
      },
    );
  }
  if (TIMEOUT_CODES.has(code)) {
    return new UpstreamError('UPSTREAM_TIMEOUT', `the upstream did not answer in time (${code})`, 504, {
      cause: err,
    });
  }
  const detail = code || (err instanceof Error ? err.message : 'unknown error');
  return new UpstreamError('UPSTREAM_UNREACHABLE', `the upstream could not be reached (${detail})`, 502, {
    cause: err,
  });
}
