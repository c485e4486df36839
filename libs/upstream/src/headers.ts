import type { IncomingHttpHeaders } from 'node:http';

export type HeaderMap = Record<string, string | string[]>;

/**
 * Hop-by-hop fields never cross the proxy in either direction (RFC 9110 §7.6.1), nor does any field the
 * Connection header names. `host` and `content-length` are set again for the new hop by undici; `expect`
 * is answered here, not forwarded (undici refuses it).
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function connectionListed(headers: IncomingHttpHeaders | HeaderMap): Set<string> | undefined {
  const raw = headers['connection'];
  // What nearly every request and answer says, decided without splitting it into a new array and Set each time.
  if (raw === undefined || raw === 'keep-alive' || raw === 'close' || raw === 'Keep-Alive') return undefined;
  const listed = new Set<string>();
  for (const value of Array.isArray(raw) ? raw : [raw]) {
    for (const token of value.split(',')) {
      const name = token.trim().toLowerCase();
      // `keep-alive` and `close` are the usual values; they name no other field (RFC 9112 §9.6).
      if (name && name !== 'keep-alive' && name !== 'close') listed.add(name);
    }
  }
  return listed.size > 0 ? listed : undefined;
}

/**
 * Headers to send upstream: the client's, less hop-by-hop, `host`, `content-length`, `expect` and `x-guardian-*`
 * (ARCHITECTURE.md#sessions).
 */
export function requestHeadersForUpstream(incoming: IncomingHttpHeaders): HeaderMap {
  const listed = connectionListed(incoming);
  const out: HeaderMap = {};
  // for...in over node's own header object: Object.entries allocated a pair per header on every request.
  for (const name in incoming) {
    const value = incoming[name];
    if (value === undefined) continue;
    if (HOP_BY_HOP.has(name) || listed?.has(name)) continue;
    if (name === 'host' || name === 'content-length' || name === 'expect') continue;
    if (name.startsWith('x-guardian-')) continue;
    out[name] = value;
  }
  return out;
}

/** Headers to send back to the client: the upstream's, less hop-by-hop. */
export function responseHeadersForClient(upstream: HeaderMap | IncomingHttpHeaders): HeaderMap {
  const listed = connectionListed(upstream);
  const out: HeaderMap = {};
  for (const name in upstream) {
    const value = upstream[name];
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || listed?.has(lower)) continue;
    out[lower] = value;
  }
  return out;
}
