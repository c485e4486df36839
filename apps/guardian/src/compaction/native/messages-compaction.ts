import { randomBytes } from 'node:crypto';

import { Injectable } from '@nestjs/common';

import type { OwnedRoute } from '../../formats/owned-route';
import { GuardianError } from '../../http/http-error';
import type { PrepareInput } from '../handoff';
import { json_, type NativeOutcome } from './native-outcome';
import { NativeStretch } from './native-stretch';
import { isObj } from './responses-shapes';

type Obj = Record<string, unknown>;

const refused = (message: string): NativeOutcome => ({
  kind: 'refuse',
  error: new GuardianError('GUARDIAN_BAD_REQUEST', message, 400),
});

/**
 * Anthropic's on-demand compaction served for a backend that has none (issue 27 item 2, `compact-2026-09-04`): a
 * request with top-level `compaction: {type: "summarize"}` is answered with one `compaction` block whose `content` is
 * guardian's summary block, readable, and whose `signature` is a cg1 handle sealing that very text; sent back first in
 * `messages`, the block's text is forwarded, never the block. Undefined: not ours.
 */
@Injectable()
export class MessagesCompaction {
  constructor(private readonly stretch: NativeStretch) {}

  async intercept(
    body: Buffer,
    inputFor: (body: Buffer, route: OwnedRoute) => PrepareInput,
  ): Promise<NativeOutcome | undefined> {
    if (!body.includes('compaction')) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      // Not JSON: the backend's own 400 says so better than we would.
      return undefined;
    }
    if (!isObj(json) || !Array.isArray(json.messages)) return undefined;
    try {
      const messages = await this.expand(json.messages);
      const { compaction, ...rest } = json;
      if (compaction === undefined)
        return { kind: 'forward', body: Buffer.from(JSON.stringify({ ...rest, messages })) };
      if (!isObj(compaction) || compaction.type !== 'summarize')
        return refused('compaction: only {"type": "summarize"} is supported');
      // As Anthropic refuses them: the two mechanisms together, and a conversation that ends in an unanswered call.
      if (json.context_management !== undefined)
        return refused('compaction cannot be combined with context_management');
      if (endsInToolCall(messages))
        return refused(
          'the conversation ends in a tool_use without its tool_result; answer it before compacting',
        );
      const request = { ...rest, messages, stream: false };
      const done = await this.stretch.compact(inputFor(Buffer.from(JSON.stringify(request)), 'messages'), {
        sealContent: true,
      });
      const message = compactionMessage(typeof json.model === 'string' ? json.model : '', done);
      return json.stream === true
        ? { kind: 'answer', contentType: 'text/event-stream; charset=utf-8', body: messageEvents(message) }
        : json_(message);
    } catch (err) {
      if (err instanceof GuardianError) return { kind: 'refuse', error: err };
      throw err;
    }
  }

  /** Every compaction block replaced by its text, once its signature verifies against that very text. */
  private async expand(messages: unknown[]): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const m of messages) {
      if (!isObj(m) || !Array.isArray(m.content)) {
        out.push(m);
        continue;
      }
      const content: unknown[] = [];
      for (const block of m.content as unknown[]) {
        if (!isObj(block) || block.type !== 'compaction') {
          content.push(block);
          continue;
        }
        // A block with null content is a failed compaction, which Anthropic treats as a no-op.
        if (block.content === null || block.content === undefined) continue;
        const text = typeof block.content === 'string' ? block.content : '';
        const signature = typeof block.signature === 'string' ? block.signature : '';
        content.push({ type: 'text', text: await this.stretch.expand(signature, text) });
      }
      // The block comes back first, in an assistant turn; a backend wants the conversation to open with the user.
      const role = out.length === 0 && m.role === 'assistant' ? 'user' : m.role;
      out.push({ ...m, role, content });
    }
    return out;
  }
}

function endsInToolCall(messages: readonly unknown[]): boolean {
  const last = messages.at(-1);
  return (
    isObj(last) &&
    last.role === 'assistant' &&
    Array.isArray(last.content) &&
    (last.content as unknown[]).some((b) => isObj(b) && b.type === 'tool_use')
  );
}

function compactionMessage(
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

/** The same message as Anthropic's SSE: start, the block, its delta, stop, message_delta, message_stop. */
function messageEvents(message: Obj): string {
  const block = (message.content as Obj[])[0]!;
  const events: [string, Obj][] = [
    ['message_start', { message: { ...message, content: [], stop_reason: null } }],
    ['content_block_start', { index: 0, content_block: { ...block, content: null } }],
    [
      'content_block_delta',
      { index: 0, delta: { type: 'compaction_delta', content: block.content, encrypted_content: null } },
    ],
    ['content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: block.signature } }],
    ['content_block_stop', { index: 0 }],
    ['message_delta', { delta: { stop_reason: 'compaction', stop_sequence: null }, usage: message.usage }],
    ['message_stop', {}],
  ];
  return events
    .map(([type, data]) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
    .join('');
}
