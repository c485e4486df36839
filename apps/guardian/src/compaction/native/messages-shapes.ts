import { randomBytes } from 'node:crypto';

import { GuardianError } from '../../http/http-error';
import { editAnswer, type AnswerEdit } from './answer-edit';
import type { NativeOutcome } from './native-outcome';

type Obj = Record<string, unknown>;

/** Shapes of Anthropic's compaction answers (BetaCompactionBlock, BetaIterationsUsage, the SSE events). */

export const refused = (message: string): NativeOutcome => ({
  kind: 'refuse',
  error: new GuardianError('GUARDIAN_BAD_REQUEST', message, 400),
});

export const forward = (json: Obj, edit?: AnswerEdit): NativeOutcome =>
  edit
    ? { kind: 'forward', body: Buffer.from(JSON.stringify(json)), answer: (u) => editAnswer(u, edit) }
    : { kind: 'forward', body: Buffer.from(JSON.stringify(json)) };

export function compactionMessage(
  model: string,
  done: { handle: string; block: string; usage: { inputTokens: number; outputTokens: number } },
): Obj {
  return {
    id: `msg_${randomBytes(12).toString('hex')}`,
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'compaction', content: done.block, encrypted_content: null, signature: done.handle }],
    stop_reason: 'compaction',
    stop_sequence: null,
    // The compaction's own cost is an iteration of its own, not in the top-level counts (BetaIterationsUsage).
    usage: {
      input_tokens: 0,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      iterations: [
        {
          type: 'compaction',
          input_tokens: done.usage.inputTokens,
          output_tokens: done.usage.outputTokens,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          cache_creation: null,
        },
      ],
    },
  };
}

/**
 * The same message as Anthropic's SSE: start, the block, its delta, stop, message_delta, message_stop. What context
 * management applied is reported in the `message_delta` (BetaRawMessageDeltaEvent), as the API streams it.
 */
export function messageEvents(message: Obj): string {
  const block = (message.content as Obj[])[0]!;
  const managed = message.context_management ?? null;
  const started: Obj = { ...message, content: [], stop_reason: null };
  if ('context_management' in message) started.context_management = null;
  const events: [string, Obj][] = [
    ['message_start', { message: started }],
    ['content_block_start', { index: 0, content_block: { ...block, content: null } }],
    [
      'content_block_delta',
      { index: 0, delta: { type: 'compaction_delta', content: block.content, encrypted_content: null } },
    ],
    ['content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: block.signature } }],
    ['content_block_stop', { index: 0 }],
    [
      'message_delta',
      {
        delta: { stop_reason: 'compaction', stop_sequence: null },
        usage: message.usage,
        context_management: managed,
      },
    ],
    ['message_stop', {}],
  ];
  return events
    .map(([type, data]) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
    .join('');
}
