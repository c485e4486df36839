/**
 * Where a request path goes upstream (the seed's mapping): `/v1/<rest>` goes to `<GUARDIAN_UPSTREAM_URL>/<rest>`,
 * so an upstream mounted under another prefix (LiteLLM `/openai/v1`, a gateway path) still works; any other path
 * (Ollama `/api/*`, vLLM `/tokenize`, `HEAD /`) goes to the upstream's origin + path. The query string is kept.
 */
export function upstreamPathFor(incomingUrl: string, basePath: string): string {
  const q = incomingUrl.indexOf('?');
  const path = q === -1 ? incomingUrl : incomingUrl.slice(0, q);
  const query = q === -1 ? '' : incomingUrl.slice(q);
  if (path === '/v1' || path.startsWith('/v1/')) {
    return `${basePath}${path.slice(3)}${query}`;
  }
  return `${path}${query}`;
}
