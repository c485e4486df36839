import { PassThrough, type Readable } from 'node:stream';

import type { UpstreamResponse } from '@guardian/upstream';

import { isObj } from './responses-shapes';

type Obj = Record<string, unknown>;

/** How one native entry rewrites the backend's answer: its SSE stream, and its JSON body (undefined: not its shape). */
export interface AnswerRewrite {
  stream(upstream: UpstreamResponse): Readable;
  json(body: Obj): Obj | undefined;
}

/**
 * The backend's answer rewritten by `rewrite`. Only a successful, unencoded JSON or SSE answer is rewritten; an error
 * answer (the backend's own 400, an overflow), a JSON body that does not parse or is not the shape the entry expects,
 * and anything else go to the client as the backend sent them.
 */
export function rewriteAnswer(upstream: UpstreamResponse, rewrite: AnswerRewrite): UpstreamResponse {
  const type = String(upstream.headers['content-type'] ?? '');
  const encoding = String(upstream.headers['content-encoding'] ?? 'identity');
  if (upstream.status >= 300 || encoding !== 'identity') return upstream;
  const headers = { ...upstream.headers };
  delete headers['content-length'];
  if (type.includes('text/event-stream')) return { ...upstream, headers, body: rewrite.stream(upstream) };
  if (!type.includes('json')) return upstream;
  const out = new PassThrough();
  const parts: Buffer[] = [];
  upstream.body.on('data', (c: Buffer) => parts.push(c));
  upstream.body.once('error', (err) => out.destroy(err));
  upstream.body.once('end', () => {
    const raw = Buffer.concat(parts).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      out.end(raw);
      return;
    }
    const edited = isObj(json) ? rewrite.json(json) : undefined;
    out.end(edited === undefined ? raw : JSON.stringify(edited));
  });
  return { ...upstream, headers, body: out };
}
