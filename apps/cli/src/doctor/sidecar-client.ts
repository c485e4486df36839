import { request } from 'undici';

import { CodedError, codeOf } from '@guardian/errors';

export type SidecarErrorCode =
  'DOCTOR_BAD_URL' | 'DOCTOR_UNREACHABLE' | 'DOCTOR_TIMEOUT' | 'DOCTOR_BAD_REPLY';

/** A look at the sidecar that got no usable answer, with a stable code (HOUSE rule 4). */
export class SidecarError extends CodedError<SidecarErrorCode> {
  override readonly name = 'SidecarError';
}

/** A reply: its status and, when it was JSON, the parsed body. */
export interface SidecarReply {
  status: number;
  body: unknown;
}

/** Where the doctor looks, and how long it waits for each GET. */
export interface SidecarTarget {
  url: string;
  token?: string;
  timeoutMs: number;
}

/** `<base>/<path>` relative to the base, so a sidecar behind a path prefix still works. */
export function sidecarUrl(base: string, path: string): URL {
  try {
    return new URL(path, base.endsWith('/') ? base : `${base}/`);
  } catch (cause: unknown) {
    throw new SidecarError('DOCTOR_BAD_URL', `not a URL: ${base}`, { cause });
  }
}

/** One GET within the deadline (connect, headers and body together). The token travels in X-Guardian-Token. */
export async function getJson(target: SidecarTarget, path: string): Promise<SidecarReply> {
  const url = sidecarUrl(target.url, path);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (target.token !== undefined) headers['x-guardian-token'] = target.token;
  const signal = AbortSignal.timeout(target.timeoutMs);
  let status: number;
  let text: string;
  try {
    const res = await request(url, { method: 'GET', headers, signal });
    status = res.statusCode;
    text = await res.body.text();
  } catch (cause: unknown) {
    if (signal.aborted) {
      throw new SidecarError('DOCTOR_TIMEOUT', `no answer within ${target.timeoutMs} ms`, { cause });
    }
    throw new SidecarError('DOCTOR_UNREACHABLE', codeOf(cause) ?? 'connection failed', { cause });
  }
  try {
    return { status, body: text === '' ? null : JSON.parse(text) };
  } catch (cause: unknown) {
    // A non-JSON answer (a proxy's HTML error page, another service on the port) is reported as such.
    if (status >= 200 && status < 300)
      throw new SidecarError('DOCTOR_BAD_REPLY', 'answer is not JSON', { cause });
    return { status, body: null };
  }
}
