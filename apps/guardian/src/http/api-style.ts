import type { IncomingHttpHeaders } from 'node:http';

import { pathOnly } from '../formats/owned-route';

/** The wire format a request speaks, so guardian's own refusals look like that API's errors. */
export type ApiStyle = 'openai' | 'anthropic';

export function apiStyleOf(url: string, headers: IncomingHttpHeaders): ApiStyle {
  const path = pathOnly(url);
  if (path.startsWith('/v1/messages') || path.startsWith('/messages')) return 'anthropic';
  if (headers['anthropic-version'] !== undefined) return 'anthropic';
  return 'openai';
}

const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  426: 'invalid_request_error',
  502: 'api_error',
  504: 'api_error',
};

/**
 * An error body shaped like the route's API (OpenAI `{"error":{...}}`, Anthropic `{"type":"error","error":{...}}`),
 * always carrying guardian's stable `code` so a client or an operator can tell guardian's answer from the upstream's.
 */
export function errorBody(style: ApiStyle, status: number, code: string, message: string): string {
  if (style === 'anthropic') {
    return JSON.stringify({
      type: 'error',
      error: { type: ANTHROPIC_TYPES[status] ?? 'api_error', message, code },
    });
  }
  const type = status >= 500 ? 'server_error' : 'invalid_request_error';
  return JSON.stringify({ error: { message, type, param: null, code } });
}
