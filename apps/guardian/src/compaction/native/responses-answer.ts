import { PassThrough } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

import type { UpstreamResponse } from '@guardian/upstream';
import { createParser } from 'eventsource-parser';

import { rewriteAnswer } from './answer-rewrite';
import { isObj } from './responses-shapes';

type Obj = Record<string, unknown>;

/** The events that carry the whole response (`response.*` lifecycle events of the `openai` SDK's ResponseStreamEvent). */
const WHOLE_RESPONSE = new Set([
  'response.created',
  'response.in_progress',
  'response.queued',
  'response.completed',
  'response.incomplete',
  'response.failed',
]);

/**
 * The backend's answer to a `/v1/responses` turn that crossed its `compact_threshold`, with the `compaction` item first
 * in the output, as OpenAI's server-side compaction answers it (docs/native-compaction.md). JSON: `output` gains the
 * item at its head. SSE: after the response's opening events (`response.created`, `response.in_progress`), the item
 * is announced as any output item is (`response.output_item.added`, then `.done`, at output_index 0); every later
 * `output_index` moves up by one, `sequence_number`s are counted again, and the final response's `output` holds the
 * item first. Only a successful, unencoded JSON or SSE answer is rewritten; an error goes to the client as it came.
 */
export function withCompactionItem(upstream: UpstreamResponse, item: Obj): UpstreamResponse {
  return rewriteAnswer(upstream, {
    stream: (u) => editedStream(u, item),
    json: (body) => (body.object === 'response' ? withItem(body, item) : undefined),
  });
}

function withItem(response: Obj, item: Obj): Obj {
  const output = Array.isArray(response.output) ? (response.output as unknown[]) : [];
  return { ...response, output: [item, ...output] };
}

function editedStream(upstream: UpstreamResponse, item: Obj): PassThrough {
  const out = new PassThrough();
  let sequence = 0;
  let announced = false;
  const send = (event: string | undefined, json: Obj): void => {
    const data = 'sequence_number' in json ? { ...json, sequence_number: sequence++ } : json;
    out.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
  };
  const announce = (): void => {
    if (announced) return;
    announced = true;
    for (const type of ['response.output_item.added', 'response.output_item.done'])
      send(type, { type, sequence_number: 0, output_index: 0, item });
  };
  const parser = createParser({
    onEvent: ({ event, data }) => {
      let json: unknown;
      try {
        json = JSON.parse(data);
      } catch {
        out.write(`${event ? `event: ${event}\n` : ''}data: ${data}\n\n`);
        return;
      }
      if (!isObj(json)) {
        out.write(`${event ? `event: ${event}\n` : ''}data: ${data}\n\n`);
        return;
      }
      const kind = String(json.type);
      const opening =
        kind === 'response.created' || kind === 'response.in_progress' || kind === 'response.queued';
      // The item goes out once the response has opened, before the backend's first item (or its end).
      if (!opening) announce();
      let edited: Obj = json;
      if (typeof json.output_index === 'number') edited = { ...json, output_index: json.output_index + 1 };
      if (WHOLE_RESPONSE.has(kind) && isObj(json.response) && !opening)
        edited = { ...edited, response: withItem(json.response, item) };
      send(event, edited);
    },
  });
  // A decoder, not chunk.toString: a character split across two chunks must not become two replacement marks.
  const text = new StringDecoder('utf8');
  upstream.body.on('data', (chunk: Buffer) => parser.feed(text.write(chunk)));
  upstream.body.once('error', (err) => out.destroy(err));
  upstream.body.once('end', () => out.end());
  return out;
}
