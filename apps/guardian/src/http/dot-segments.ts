import { upstreamTarget } from '@guardian/upstream';

import { GuardianError } from './http-error';

/**
 * Dot segments in a request path (`/v1/../x`, `/v1/./models`, and their `%2e` spellings), removed before anything
 * routes on the path (RFC 3986 §5.2.4, as nginx and browsers do). Without this guardian would decide on one path
 * (`/v1/../guardian/stats` is "proxied") while the upstream resolved another; and `/v1/../x` would reach past an
 * upstream mounted under a prefix (`GUARDIAN_UPSTREAM_URL` with `/openai/v1`). Such a path is served as the one it resolves to; what
 * is then forwarded stays under the upstream's root ({@link forwardedPath}). A path written under `/guardian` is not resolved
 * (bootstrap.ts): it stays guardian's own, and is never forwarded.
 */
export function withoutDotSegments(url: string): string {
  // The hot path: nearly every request has no dot segment, and pays a scan or two of a short string.
  if (!url.includes('/.') && !/%2e/i.test(url)) return url;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const query = q === -1 ? '' : url.slice(q);
  const segments = path.split('/');
  let dots = false;
  const out: string[] = [];
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i]!;
    const kind = dotKind(segment);
    if (kind === 0) {
      out.push(segment);
      continue;
    }
    dots = true;
    if (kind === 2) out.pop();
    // A dot segment at the end leaves the path ending in '/', as the RFC's algorithm does.
    if (i === segments.length - 1) out.push('');
  }
  return dots ? `/${out.join('/')}${query}` : url;
}

/** 0: an ordinary segment; 1: `.`; 2: `..` (either spelled with `%2e`, in any case). */
function dotKind(segment: string): 0 | 1 | 2 {
  if (segment.length === 0 || segment.length > 6) return 0;
  const plain = segment.replace(/%2e/gi, '.');
  return plain === '.' ? 1 : plain === '..' ? 2 : 0;
}

/**
 * The upstream path of a proxied request, or guardian's 400 `GUARDIAN_PATH_OUTSIDE_UPSTREAM` for one that an upstream
 * could read as leaving its base path (issue 30 item 4; ARCHITECTURE.md#fail-open rule 6, ADR 0019). Runs after
 * {@link withoutDotSegments}; what is left to refuse is what only the server behind guardian would decode.
 */
export function forwardedPath(
  url: string,
  basePath: string,
): { ok: true; value: string } | { ok: false; refusal: GuardianError } {
  const target = upstreamTarget(url, basePath);
  if (target.ok) return { ok: true, value: target.path };
  return { ok: false, refusal: new GuardianError('GUARDIAN_PATH_OUTSIDE_UPSTREAM', target.reason, 400) };
}
