// A recording forwarder between the sidecar and the upstream the retention tools measure: it sees every summariser
// call (and the summary that came back) and every request the sidecar forwarded, whatever the backend. Buffered,
// not streamed: the tools send non-streaming requests, and the summariser's own calls are non-streaming.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

import { SUMMARY_MARKER } from '@guardian/stub-backend';
import { request } from 'undici';

/** How long one request may wait for a slow backend (a summary on a loaded CPU took over 5 minutes here). */
export const SLOW_BACKEND_MS = 30 * 60_000;

/** One generation call the sidecar made upstream. */
export interface TapCall {
  /** True for a summariser call (its prompt carries guardian's marker). */
  summary: boolean;
  /** The request body as sent upstream. */
  body: string;
  status: number;
  /** The assistant text of the answer (chat, messages or responses shape), '' when there is none. */
  text: string;
}

export interface Tap {
  /** Base URL to give the sidecar as GUARDIAN_UPSTREAM_URL (the upstream's path, `/v1` included, kept). */
  baseUrl: string;
  calls: TapCall[];
  close(): Promise<void>;
}

const GENERATION = /\/(chat\/completions|messages|responses)(\?|$)/;
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The assistant text of a non-streamed answer in any of the three API shapes. */
export function answerText(json: unknown): string {
  if (!isObj(json)) return '';
  const parts: string[] = [];
  const add = (content: unknown): void => {
    if (typeof content === 'string') parts.push(content);
    else if (Array.isArray(content))
      for (const p of content) if (isObj(p) && typeof p.text === 'string') parts.push(p.text);
  };
  if (Array.isArray(json.choices)) {
    for (const c of json.choices) if (isObj(c) && isObj(c.message)) add(c.message.content);
  } else if (Array.isArray(json.output)) {
    for (const item of json.output) if (isObj(item)) add(item.content);
  } else {
    add(json.content);
  }
  return parts.join('');
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Starts a tap on a loopback port in front of `upstream` (an OpenAI-compatible base URL such as `http://h:8080/v1`). */
export async function startTap(upstream: string): Promise<Tap> {
  const target = new URL(upstream);
  const calls: TapCall[] = [];
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v;
    const up = await request(new URL(req.url ?? '/', target.origin), {
      method: (req.method ?? 'GET') as 'GET',
      headers,
      body: body.length > 0 ? body : undefined,
      // The sidecar bounds its own calls (GUARDIAN_SUMMARY_TIMEOUT_MS, GUARDIAN_UPSTREAM_TIMEOUT); the tap must not
      // cut them shorter with undici's 5-minute default.
      headersTimeout: SLOW_BACKEND_MS,
      bodyTimeout: SLOW_BACKEND_MS,
    });
    const answer = Buffer.from(await up.body.arrayBuffer());
    if (req.method === 'POST' && GENERATION.test(req.url ?? '')) {
      const text = body.toString('utf8');
      let parsed: unknown;
      try {
        parsed = JSON.parse(answer.toString('utf8'));
      } catch (err) {
        // A streamed or non-JSON answer has no text to score; the call still counts as made.
        parsed = { unparsed: String(err) };
      }
      calls.push({
        summary: text.includes(SUMMARY_MARKER),
        body: text,
        status: up.statusCode,
        text: answerText(parsed),
      });
    }
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(up.headers))
      if (typeof v === 'string' && !['transfer-encoding', 'connection', 'content-length'].includes(k))
        out[k] = v;
    res.writeHead(up.statusCode, out).end(answer);
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // The upstream went away: a 502 the sidecar fails open on, and the tool reports as an error.
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `retention tap: ${String(err)}` } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}${target.pathname.replace(/\/$/, '')}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
