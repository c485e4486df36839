import type { IncomingHttpHeaders } from 'node:http';

import { sha256Hex, type NeutralMessage } from '@guardian/compaction';

/** Header values longer than this are ignored and the derived key is used (CONTRACTS §1). */
export const MAX_SESSION_HEADER_BYTES = 256;

export interface ResolvedSession {
  /** The raw key: the header value, or `derived:<hash>`. Shown only in the session's own usage. */
  key: string;
  /** sha256 hex of the key: used in paths, memo keys and logs. */
  hash: string;
  fromHeader: boolean;
  /** Set when a header was sent but ignored; answered as an X-Guardian-Warning. */
  warning?: string;
}

/**
 * The session (CONTRACTS §1): the `X-Guardian-Session` header when sent (and at most 256 bytes), else a hash of
 * model + first system message + first user message (the seed's rule). Raw values never reach a path or a label.
 */
export function resolveSession(
  headers: IncomingHttpHeaders,
  model: string,
  messages: readonly NeutralMessage[],
  firstSystem: string,
): ResolvedSession {
  const raw = headers['x-guardian-session'];
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  let warning: string | undefined;
  if (value) {
    if (Buffer.byteLength(value) <= MAX_SESSION_HEADER_BYTES) {
      return { key: value, hash: sessionHash(value), fromHeader: true };
    }
    warning = `X-Guardian-Session ignored: over ${MAX_SESSION_HEADER_BYTES} bytes; the derived session key is used`;
  }
  const system = firstSystem || messages.find((m) => m.role === 'system')?.text || '';
  const user = messages.find((m) => m.role === 'user')?.text ?? '';
  const key = `derived:${sha256Hex(`${model}\n${system}\n${user}`).slice(0, 16)}`;
  return { key, hash: sessionHash(key), fromHeader: false, warning };
}

/** The stored form of a session key; `/guardian/usage?session=<key>` looks a session up by it. */
export function sessionHash(key: string): string {
  return sha256Hex(`context-guardian/session\n${key}`);
}
