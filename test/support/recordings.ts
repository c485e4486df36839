import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The real clients' request shapes, recorded by the works-with runner (test/works-with/recordings/<client>-<version>
 * .json: every text replaced by `<text:LENGTH>`, the model by `<model>`), and what tests build from them: the
 * recorded body with filler of the same lengths, and later turns in the same client's item shape.
 */
export type Json = Record<string, unknown>;
export type Route = 'chat' | 'messages' | 'responses';

export interface RecordedRequest {
  method: string;
  route: string;
  query: string[];
  body_skeleton?: unknown;
}

export interface Recording {
  client: string;
  version: string;
  guardian_window: number;
  requests: RecordedRequest[];
}

export const RECORDINGS_DIR = join(__dirname, '..', 'works-with', 'recordings');

export function loadRecordings(dir = RECORDINGS_DIR): Recording[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Recording);
}

const WORDS = [
  'ledger',
  'export',
  'retry',
  'queue',
  'schema',
  'tenant',
  'invoice',
  'cursor',
  'build',
  'error',
];

/** `n` characters of word filler in 12-word lines; `seed` varies the words so two texts never hash alike. */
export function filler(n: number, seed: number): string {
  let out = '';
  for (let i = 0; out.length < n; i++)
    out += `${WORDS[(i * 7 + seed) % WORDS.length]}${i % 12 === 11 ? '\n' : ' '}`;
  return out.slice(0, n);
}

/** The skeleton with every `<text:N>` filled in and the model named. */
export function fillSkeleton(skeleton: unknown, model = 'stub-model', seed = { n: 0 }, key = ''): unknown {
  // The one string a clear_thinking edit's `keep` takes (BetaClearThinking20251015Edit); the recorder blanked it.
  if (key === 'keep' && skeleton === '<text:3>') return (seed.n += 1) && 'all';
  if (typeof skeleton === 'string') {
    if (skeleton === '<model>') return model;
    const m = /^<text:(\d+)>$/.exec(skeleton);
    return m ? filler(Number(m[1]), (seed.n += 1)) : skeleton;
  }
  if (Array.isArray(skeleton)) return skeleton.map((v) => fillSkeleton(v, model, seed));
  if (typeof skeleton === 'object' && skeleton !== null) {
    return Object.fromEntries(Object.entries(skeleton).map(([k, v]) => [k, fillSkeleton(v, model, seed, k)]));
  }
  return skeleton;
}

export function routeOf(path: string): Route {
  if (path.includes('/messages')) return 'messages';
  if (path.includes('/responses')) return 'responses';
  return 'chat';
}

export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The list of conversation items of a request body in any of the three formats. */
export function itemsOf(body: Json): Json[] {
  const list = body.messages ?? body.input;
  return Array.isArray(list) ? list.filter(isObj) : [];
}

/** Every text of one item (message content, text parts, tool results), joined. */
export function itemText(item: Json): string {
  const c = item.content ?? item.output;
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) return '';
  return c
    .filter(isObj)
    .map((p) => (typeof p.text === 'string' ? p.text : typeof p.content === 'string' ? p.content : ''))
    .join('\n');
}

/** Every text a request carries: top-level system/instructions and every item. */
export function requestText(body: Json): string {
  const top: string[] = [];
  if (typeof body.system === 'string') top.push(body.system);
  else if (Array.isArray(body.system)) top.push(itemText({ content: body.system }));
  if (typeof body.instructions === 'string') top.push(body.instructions);
  return [...top, ...itemsOf(body).map(itemText)].join('\n');
}

/**
 * A user turn. With a template (the client's own user item), its shape is kept: a string stays a string, and with
 * parts every part stays (Claude Code's leading reminder block) and the last text part takes `text`.
 */
export function userItem(route: Route, text: string, template?: Json): Json {
  if (template && Array.isArray(template.content)) {
    const parts = template.content.filter(isObj);
    let last = -1;
    parts.forEach((p, i) => {
      if (typeof p.text === 'string') last = i;
    });
    if (last !== -1) return { ...template, content: parts.map((p, i) => (i === last ? { ...p, text } : p)) };
  }
  if (template && typeof template.content === 'string') return { ...template, content: text };
  if (route === 'responses')
    return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
  if (route === 'messages') return { role: 'user', content: [{ type: 'text', text }] };
  return { role: 'user', content: text };
}

export function assistantItem(route: Route, text: string): Json {
  if (route === 'responses')
    return { type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] };
  if (route === 'messages') return { role: 'assistant', content: [{ type: 'text', text }] };
  return { role: 'assistant', content: text };
}

/** The first recorded generation request of a recording that carries tools when one does (the agent's main loop). */
export function mainRequest(rec: Recording): RecordedRequest {
  const posts = rec.requests.filter((r) => r.method === 'POST' && r.body_skeleton !== undefined);
  const withTools = posts.find(
    (r) => isObj(r.body_skeleton) && Array.isArray(r.body_skeleton.tools) && r.body_skeleton.tools.length > 0,
  );
  const first = withTools ?? posts[0];
  if (!first) throw new Error(`${rec.client}: no recorded POST with a body`);
  return first;
}

/**
 * The client's opening request with its last user message replaced: what the client sends before the user's first
 * words (system prompt, tools, instruction items, context notes) stays exactly as recorded.
 */
export function openingBody(
  rec: Recording,
  firstUserText: string,
  model = 'stub-model',
): { route: Route; path: string; body: Json } {
  const req = mainRequest(rec);
  const body = fillSkeleton(req.body_skeleton, model) as Json;
  const items = itemsOf(body);
  let last = -1;
  items.forEach((it, i) => {
    if (it.role === 'user') last = i;
  });
  const route = routeOf(req.route);
  // Everything else stays as recorded (Claude Code sends a system item after the user's first message).
  const opening = items.map((it, i) => (i === last ? userItem(route, firstUserText, it) : it));
  const key = Array.isArray(body.messages) ? 'messages' : 'input';
  const query = req.query.length ? `?${req.query.map((q) => `${q}=true`).join('&')}` : '';
  return { route, path: `${req.route}${query}`, body: { ...body, [key]: opening, stream: false } };
}
