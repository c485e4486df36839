/** The routes guardian reads (and may compact); everything else only passes through. */
export type OwnedRoute = 'chat' | 'messages' | 'responses';

export function pathOnly(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** `/v1/chat/completions` -> chat, `/v1/messages` -> messages, `/v1/responses` -> responses (POST only). */
export function ownedRoute(method: string, url: string): OwnedRoute | undefined {
  if (method !== 'POST') return undefined;
  const path = pathOnly(url).replace(/\/+$/, '');
  if (path === '/v1/chat/completions' || path === '/chat/completions') return 'chat';
  if (path === '/v1/messages' || path === '/messages') return 'messages';
  if (path === '/v1/responses' || path === '/responses') return 'responses';
  return undefined;
}
