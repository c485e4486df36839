import { PassThrough } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

import type { UpstreamResponse } from '@guardian/upstream';
import { createParser } from 'eventsource-parser';

import { rewriteAnswer } from './answer-rewrite';
import type { AppliedEdit } from './context-editing';
import { isObj } from './responses-shapes';

type Obj = Record<string, unknown>;

/**
 * What guardian adds to the backend's answer to a request whose context it edited (issue 27 item 2), as Anthropic's
 * own answer has it: `context_management.applied_edits` (`BetaContextManagementResponse`, top level and in the
 * streamed `message_delta`), and after a threshold compaction the `compaction` block first in `content`, its cost as
 * the first of `usage.iterations`.
 */
export interface AnswerEdit {
  applied: AppliedEdit[];
  compaction?: { block: Obj; iteration: Obj };
}

/**
 * The answer with the edit applied. Only a successful, unencoded JSON or SSE answer is rewritten; an error answer
 * (the backend's own 400, an overflow) and anything else go to the client as the backend sent them.
 */
export function editAnswer(upstream: UpstreamResponse, edit: AnswerEdit): UpstreamResponse {
  return rewriteAnswer(upstream, {
    stream: (u) => editedStream(u, edit),
    json: (body) => (body.type === 'message' ? editedMessage(body, edit) : undefined),
  });
}

function editedMessage(message: Obj, edit: AnswerEdit): Obj {
  const out: Obj = { ...message, context_management: { applied_edits: edit.applied } };
  if (!edit.compaction) return out;
  const content = Array.isArray(message.content) ? (message.content as unknown[]) : [];
  out.content = [edit.compaction.block, ...content];
  if (isObj(message.usage)) out.usage = withIterations(message.usage, edit.compaction.iteration);
  return out;
}

/** The answer's own usage as the `message` iteration after the compaction's (BetaMessageIterationUsage). */
function withIterations(usage: Obj, compaction: Obj): Obj {
  const n = (v: unknown): number => (typeof v === 'number' ? v : 0);
  return {
    ...usage,
    iterations: [
      compaction,
      {
        type: 'message',
        input_tokens: n(usage.input_tokens),
        output_tokens: n(usage.output_tokens),
        cache_creation_input_tokens: n(usage.cache_creation_input_tokens),
        cache_read_input_tokens: n(usage.cache_read_input_tokens),
        cache_creation: null,
      },
    ],
  };
}

/** The SSE answer re-emitted event by event: the compaction block after `message_start`, the rest shifted by one. */
function editedStream(upstream: UpstreamResponse, edit: AnswerEdit): PassThrough {
  const out = new PassThrough();
  const shift = edit.compaction ? 1 : 0;
  const send = (event: string | undefined, data: string): void => {
    out.write(`${event ? `event: ${event}\n` : ''}data: ${data}\n\n`);
  };
  const parser = createParser({
    onEvent: ({ event, data }) => {
      let json: unknown;
      try {
        json = JSON.parse(data);
      } catch {
        send(event, data);
        return;
      }
      if (!isObj(json)) return send(event, data);
      if (json.type === 'message_delta') {
        const delta: Obj = { ...json, context_management: { applied_edits: edit.applied } };
        if (edit.compaction && isObj(json.usage))
          delta.usage = withIterations(json.usage, edit.compaction.iteration);
        return send(event, JSON.stringify(delta));
      }
      if (shift && typeof json.index === 'number' && String(json.type).startsWith('content_block_'))
        return send(event, JSON.stringify({ ...json, index: json.index + shift }));
      send(event, data);
      if (json.type === 'message_start' && edit.compaction)
        for (const [e, d] of blockEvents(edit.compaction.block)) send(e, d);
    },
  });
  // A decoder, not chunk.toString: a character split across two chunks must not become two replacement marks.
  const text = new StringDecoder('utf8');
  upstream.body.on('data', (chunk: Buffer) => parser.feed(text.write(chunk)));
  upstream.body.once('error', (err) => out.destroy(err));
  upstream.body.once('end', () => out.end());
  return out;
}

/** A compaction block as Anthropic streams it: start (no content), one compaction_delta, stop. */
function blockEvents(block: Obj): [string, string][] {
  const ev = (type: string, data: Obj): [string, string] => [type, JSON.stringify({ type, ...data })];
  return [
    ev('content_block_start', { index: 0, content_block: { ...block, content: null } }),
    ev('content_block_delta', {
      index: 0,
      delta: { type: 'compaction_delta', content: block.content, encrypted_content: null },
    }),
    ev('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: block.signature } }),
    ev('content_block_stop', { index: 0 }),
  ];
}
