import { Injectable } from '@nestjs/common';

import type { NativeEntry } from '@guardian/telemetry';

import type { OwnedRoute } from '../../formats/owned-route';
import type { PrepareInput } from '../handoff';
import {
  applyContextEdits,
  contextManagementRefusal,
  contextManagementSchema,
  type AppliedEdit,
} from './context-editing';
import { compactionMessage, forward, messageEvents, refused } from './messages-shapes';
import { json_, type NativeOutcome } from './native-outcome';
import { NativeReporter, type NativeSaid } from './native-reporter';
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
  constructor(
    private readonly stretch: NativeStretch,
    private readonly reporter: NativeReporter,
  ) {}

  async edit(
    request: Obj & { messages: unknown[] },
    managed: unknown,
    inputFor: (body: Buffer, route: OwnedRoute) => PrepareInput,
  ): Promise<NativeOutcome> {
    const named = entriesNamed(managed);
    const input = inputFor(Buffer.from(JSON.stringify(request)), 'messages');
    const said: NativeSaid = {
      model: typeof request.model === 'string' ? request.model : undefined,
      owner_hash: input.owner?.ownerHash ?? null,
    };
    const refusal = contextManagementRefusal(managed);
    if (refusal) {
      for (const entry of named) this.reporter.entry(entry, 'refused', 'messages', said);
      return refused(refusal);
    }
    const measure = await this.stretch.measure(input);
    // A request the engine does not read goes on without the field it cannot take, and unedited (fail open).
    if (!measure) return forward(request);
    const edited = applyContextEdits(request.messages, contextManagementSchema.parse(managed), measure);
    const applied = edited.applied;
    const tail = edited.compact ? lastTypedUser(edited.messages) : -1;
    this.reportEdits(named, applied, said);
    if (!edited.compact || tail <= 0) {
      if (named.includes('messages_threshold'))
        this.reporter.entry('messages_threshold', 'not_needed', 'messages');
      return forward({ ...request, messages: edited.messages }, { applied });
    }

    // Threshold compaction: everything before the newest message the user typed is summarised into one block, which
    // opens the conversation the backend answers, and the client gets the block first in the answer's content.
    const model = typeof request.model === 'string' ? request.model : '';
    const summarised = { ...request, messages: edited.messages.slice(0, tail), stream: false };
    const done = await this.stretch.compact(inputFor(Buffer.from(JSON.stringify(summarised)), 'messages'), {
      sealContent: true,
      instructions: edited.compact.instructions,
    });
    this.reporter.entry('messages_threshold', 'applied', 'messages', done.said);
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

  /** Each context edit the request named: applied when it changed the messages, else not needed. */
  private reportEdits(
    named: readonly NativeEntry[],
    applied: readonly AppliedEdit[],
    said: NativeSaid,
  ): void {
    for (const [entry, type] of [
      ['clear_tool_uses', 'clear_tool_uses_20250919'],
      ['clear_thinking', 'clear_thinking_20251015'],
    ] as const) {
      if (!named.includes(entry)) continue;
      const done = applied.find((a) => a.type === type);
      this.reporter.entry(
        entry,
        done ? 'applied' : 'not_needed',
        'messages',
        done ? { ...said, cleared_input_tokens: done.cleared_input_tokens } : said,
      );
    }
  }
}

/** The entry points a `context_management` names, as guardian_native_requests_total labels them. */
function entriesNamed(managed: unknown): NativeEntry[] {
  const edits = isObj(managed) && Array.isArray(managed.edits) ? (managed.edits as unknown[]) : [];
  const out = new Set<NativeEntry>();
  for (const e of edits) {
    const type = isObj(e) ? e.type : undefined;
    if (type === 'clear_tool_uses_20250919') out.add('clear_tool_uses');
    else if (type === 'clear_thinking_20251015') out.add('clear_thinking');
    else if (type === 'compact_20260112') out.add('messages_threshold');
  }
  return [...out];
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
