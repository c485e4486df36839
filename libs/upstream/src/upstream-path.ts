/** Where a client's path goes upstream, or why it goes nowhere (docs/ARCHITECTURE.md#http-surface). */
export type UpstreamTarget = { ok: true; path: string } | { ok: false; reason: string };

/**
 * The upstream's root: the configured base path without its final `/v1` (`/tenant-a/v1` is `/tenant-a`; the usual
 * `/v1` is the origin itself, `''`). The OpenAI-compatible API sits at `<root>/v1` and a backend's own paths (Ollama
 * `/api/*`, vLLM `/tokenize`, `HEAD /`) at `<root>/...`, so this, not the origin, is where the upstream begins.
 */
export function upstreamRoot(basePath: string): string {
  return basePath.endsWith('/v1') ? basePath.slice(0, -3) : basePath;
}

/**
 * Maps a client's path (dot segments already resolved at the edge) under the upstream's root, and refuses one that
 * an upstream or gateway could read as climbing out of it (issue 30 item 4). `/v1/<rest>` goes to
 * `<basePath>/<rest>`, so an upstream mounted under another prefix (LiteLLM `/openai/v1`, a gateway path) still
 * works; any other path `<p>` goes to `<root><p>`. The query string is kept; the path is forwarded as written.
 * Nothing a client sends reaches the upstream outside `<root>`: a path that leaves it under the most permissive
 * reading ({@link permissiveSegments}) is refused, since guardian cannot know how the server behind it decodes.
 */
export function upstreamTarget(incomingUrl: string, basePath: string): UpstreamTarget {
  const q = incomingUrl.indexOf('?');
  const path = q === -1 ? incomingUrl : incomingUrl.slice(0, q);
  const query = q === -1 ? '' : incomingUrl.slice(q);
  // An absolute-form target (`http://other/x`, RFC 9112 §3.2.2) or `*` names no path under the root.
  if (!path.startsWith('/')) return { ok: false, reason: 'the request target is not a path' };
  const root = upstreamRoot(basePath);
  const mapped = path === '/v1' || path.startsWith('/v1/') ? `${basePath}${path.slice(3)}` : `${root}${path}`;
  // The hot path: a path with no `%`, `\`, `;` or `.` after a slash cannot be read as leaving the root.
  if (!/[%\\;]|\/\./.test(path)) return { ok: true, path: `${mapped}${query}` };
  const inside = permissiveSegments(mapped);
  const rootSegments = permissiveSegments(root);
  if (
    inside === null ||
    rootSegments === null ||
    inside.length < rootSegments.length ||
    rootSegments.some((s, i) => inside[i] !== s)
  )
    return { ok: false, reason: `the path leaves the upstream's base path (${root || '/'})` };
  return { ok: true, path: `${mapped}${query}` };
}

/** Rounds of percent-decoding tried: `%25252e` is three; a path that still changes after that is refused. */
const DECODE_ROUNDS = 4;
/** Overlong UTF-8 spellings of `.` and `/` (CVE-2000-0884 and kin), after the percent-decoding has made them bytes. */
const OVERLONG_DOT = /\xc0\xae|\xe0\x80\xae/g;
const OVERLONG_SLASH = /\xc0\xaf|\xe0\x80\xaf|\xc1\x9c/g;

/**
 * The segments `path` resolves to under the most permissive reading a server in front of the model might apply:
 * percent-decoded until nothing changes (double encoding; `%2f` as `/`), backslashes as slashes (the WHATWG URL
 * parser, IIS), overlong UTF-8 dots and slashes, `;params` dropped from a segment (Tomcat and Spring read `/..;/`
 * as `/../`), empty segments merged (nginx `merge_slashes`), then dot segments resolved (RFC 3986 §5.2.4).
 * Null when the decoding does not settle.
 */
export function permissiveSegments(path: string): string[] | null {
  let text = path;
  for (let round = 0; ; round++) {
    // Byte by byte into a latin1 string: an invalid UTF-8 sequence must not throw, it must be read.
    const decoded = text.replace(/%([0-9a-f]{2})/gi, (_, hex: string) =>
      String.fromCharCode(parseInt(hex, 16)),
    );
    if (decoded === text) break;
    if (round === DECODE_ROUNDS) return null;
    text = decoded;
  }
  text = text.replace(OVERLONG_DOT, '.').replace(OVERLONG_SLASH, '/').replaceAll('\\', '/');
  const out: string[] = [];
  for (const raw of text.split('/')) {
    const semicolon = raw.indexOf(';');
    const segment = semicolon === -1 ? raw : raw.slice(0, semicolon);
    if (segment === '' || segment === '.') continue;
    if (segment === '..') out.pop();
    else out.push(segment);
  }
  return out;
}
