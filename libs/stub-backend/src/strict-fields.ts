import type { GenerationRoute } from './types';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Fields and item types the providers' compaction protocols add, which a self-hosted backend does not know and
 * refuses with a 400 (vLLM's request models forbid extra fields and unknown input item types; issue 27). The stub
 * refuses them the same way, so a test proves guardian never forwards one.
 */
const UNKNOWN_FIELDS: Record<GenerationRoute, readonly string[]> = {
  // OpenAI's `context_management` (threshold compaction) is not in vLLM's Responses model.
  responses: ['context_management', 'compaction'],
  chat: ['context_management', 'compaction'],
  // Anthropic's `context_management` (context editing, threshold compaction) and on-demand `compaction`: guardian
  // applies them and strips the fields (issue 27 item 2), so a request that still carries one is guardian's bug.
  messages: ['context_management', 'compaction'],
};
const UNKNOWN_ITEMS = new Set([
  'compaction',
  'compaction_trigger',
  'compaction_summary',
  'context_compaction',
]);

/** Why the backend would refuse this body, or undefined when it reads it. */
export function strictRefusal(body: Obj, route: GenerationRoute): string | undefined {
  for (const field of UNKNOWN_FIELDS[route])
    if (field in body) return `${field}: Extra inputs are not permitted`;
  const items: unknown[] =
    route === 'responses' && Array.isArray(body.input)
      ? body.input
      : route === 'messages' && Array.isArray(body.messages)
        ? body.messages.flatMap((m) => (isObj(m) && Array.isArray(m.content) ? (m.content as unknown[]) : []))
        : [];
  for (const item of items)
    if (isObj(item) && typeof item.type === 'string' && UNKNOWN_ITEMS.has(item.type))
      return `unknown input item type: ${item.type}`;
  return undefined;
}
