import { Injectable } from '@nestjs/common';

import type { OwnedRoute } from '../../formats/owned-route';
import type { PrepareInput } from '../handoff';
import { applyContextEdits, contextManagementRefusal, contextManagementSchema } from './context-editing';
import { compactionMessage, forward, messageEvents, refused } from './messages-shapes';
import { json_, type NativeOutcome } from './native-outcome';
import { NativeStretch } from './native-stretch';
import { isObj } from './responses-shapes';

type Obj = Record<string, unknown>;

/**
 * Anthropic's `context_management` served for a backend that has none (issue 27 item 2): context editing
 * (`clear_tool_uses_20250919`, `clear_thinking_20251015`) applied to the messages, threshold compaction
 * (`compact_20260112`) by guardian's summary, and what was applied added to the backend's answer. The field itself is
 * never forwarded: the backend would refuse it.
 */
@Injectable()
export class MessagesContext {
  constructor(private readonly stretch: NativeStretch) {}

  async edit(
    request: Obj & { messages: unknown[] },
    managed: unknown,
    inputFor: (body: Buffer, route: OwnedRoute) => PrepareInput,
  ): Promise<NativeOutcome> {
    const refusal = contextManagementRefusal(managed);
    if (refusal) return refused(refusal);
    const measure = await this.stretch.measure(inputFor(Buffer.from(JSON.stringify(request)), 'messages'));
    // A request the engine does not read goes on without the field it cannot take, and unedited (fail open).
    if (!measure) return forward(request);
    const edited = applyContextEdits(request.messages, contextManagementSchema.parse(managed), measure);
    const applied = edited.applied;
    const tail = edited.compact ? lastTypedUser(edited.messages) : -1;
    if (!edited.compact || tail <= 0) return forward({ ...request, messages: edited.messages }, { applied });

    // Threshold compaction: everything before the newest message the user typed is summarised into one block, which
    // opens the conversation the backend answers, and the client gets the block first in the answer's content.
    const model = typeof request.model === 'string' ? request.model : '';
    const summarised = { ...request, messages: edited.messages.slice(0, tail), stream: false };
    const done = await this.stretch.compact(inputFor(Buffer.from(JSON.stringify(summarised)), 'messages'), {
      sealContent: true,
      instructions: edited.compact.instructions,
    });
    const message = compactionMessage(model, done);
    const block = (message.content as Obj[])[0]!;
    if (edited.compact.pause_after_compaction === true) {
      const paused = { ...message, context_management: { applied_edits: applied } };
      return request.stream === true
        ? { kind: 'answer', contentType: 'text/event-stream; charset=utf-8', body: messageEvents(paused) }
        : json_(paused);
    }
    const iteration = ((message.usage as Obj).iterations as Obj[])[0]!;
    const first = edited.messages[tail] as Obj;
    const opened = {
      ...first,
      content: [{ type: 'text', text: done.block }, ...contentBlocks(first.content)],
    };
    return forward(
      { ...request, messages: [opened, ...edited.messages.slice(tail + 1)] },
      { applied, compaction: { block, iteration } },
    );
  }
}

/** The newest user message that is not tool results: the kept tail starts there, so no call loses its result. */
function lastTypedUser(messages: readonly unknown[]): number {
  return messages.findLastIndex(
    (m) =>
      isObj(m) &&
      m.role === 'user' &&
      !contentBlocks(m.content).some((b) => isObj(b) && b.type === 'tool_result'),
  );
}

function contentBlocks(content: unknown): unknown[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? (content as unknown[]) : [];
}
