import { Injectable } from '@nestjs/common';

import { outlineOnce, parseField, withoutField } from '../../formats/json-outline';
import type { OwnedRoute } from '../../formats/owned-route';
import { GuardianError } from '../../http/http-error';
import type { PrepareInput } from '../handoff';
import { editsAreNoOps } from './context-editing';
import { MessagesContext } from './messages-context';
import { compactionMessage, forward, messageEvents, refused } from './messages-shapes';
import { NativeHandles } from './native-handles';
import { json_, type NativeOutcome } from './native-outcome';
import { NativeReporter } from './native-reporter';
import { NativeStretch } from './native-stretch';
import { isObj } from './responses-shapes';

type Obj = Record<string, unknown>;

/**
 * Anthropic's on-demand compaction served for a backend that has none (issue 27 item 2, `compact-2026-09-04`): a
 * request with top-level `compaction: {type: "summarize"}` is answered with one `compaction` block whose `content` is
 * guardian's summary block, readable, and whose `signature` is a cg1 handle sealing that very text; sent back first in
 * `messages`, the block's text is forwarded, never the block. Undefined: not ours.
 */
@Injectable()
export class MessagesCompaction {
  constructor(
    private readonly stretch: NativeStretch,
    private readonly context: MessagesContext,
    private readonly handles: NativeHandles,
    private readonly reporter: NativeReporter,
  ) {}

  async intercept(
    body: Buffer,
    inputFor: (body: Buffer, route: OwnedRoute) => PrepareInput,
  ): Promise<NativeOutcome | undefined> {
    const compacting = body.includes('compaction');
    if (!compacting && !body.includes('context_management')) return undefined;
    if (!compacting) {
      // The hot path of Claude Code, which sends a no-op edit on every request: the field cut out, the rest as sent.
      const o = outlineOnce(body, []);
      const stripped = o && editsAreNoOps(parseField(body, o, 'context_management'));
      const cut = stripped ? withoutField(body, o, 'context_management') : undefined;
      if (cut) {
        this.reporter.entry('clear_thinking', 'not_needed', 'messages');
        return { kind: 'forward', body: cut };
      }
    }
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      // Not JSON: the backend's own 400 says so better than we would.
      return undefined;
    }
    if (!isObj(json) || !Array.isArray(json.messages)) return undefined;
    // A prompt that only mentions the word goes on as its bytes (ADR 0005): only the protocol's own fields and blocks
    // are rewritten.
    if (!('compaction' in json) && !('context_management' in json) && !json.messages.some(hasCompactionBlock))
      return undefined;
    const owner = inputFor(body, 'messages').owner?.ownerHash;
    try {
      const messages = await this.expand(json.messages, owner);
      const { compaction, context_management: managed, ...rest } = json;
      if (compaction === undefined)
        return managed === undefined
          ? forward({ ...rest, messages })
          : await this.context.edit({ ...rest, messages }, managed, inputFor);
      const refusal = onDemandRefusal(compaction, managed, messages);
      if (refusal) {
        this.reporter.entry('messages_on_demand', 'refused', 'messages', { owner_hash: owner ?? null });
        return refused(refusal);
      }
      const request = { ...rest, messages, stream: false };
      const done = await this.stretch.compact(inputFor(Buffer.from(JSON.stringify(request)), 'messages'), {
        sealContent: true,
        instructions:
          isObj(compaction) && typeof compaction.instructions === 'string'
            ? compaction.instructions
            : undefined,
      });
      this.reporter.entry('messages_on_demand', 'applied', 'messages', done.said);
      const message = compactionMessage(typeof json.model === 'string' ? json.model : '', done);
      return json.stream === true
        ? { kind: 'answer', contentType: 'text/event-stream; charset=utf-8', body: messageEvents(message) }
        : json_(message);
    } catch (err) {
      if (err instanceof GuardianError) return { kind: 'refuse', error: err };
      throw err;
    }
  }

  /**
   * Every compaction block replaced by its text, once its signature verifies against that very text. As Anthropic
   * does, what came before the newest block is dropped: the block stands for it (a threshold compaction's block comes
   * back inside the history, an on-demand one first).
   */
  private async expand(messages: unknown[], owner: string | undefined): Promise<unknown[]> {
    const at = messages.findLastIndex((m) => blocksOf(m).some(isCompaction));
    const out: unknown[] = [];
    for (const [i, m] of messages.entries()) {
      if (i < at) continue;
      if (i > at || !isObj(m)) {
        out.push(m);
        continue;
      }
      const blocks = blocksOf(m);
      const first = blocks.findLastIndex(isCompaction);
      const block = blocks[first] as Obj;
      const rest = blocks.slice(first + 1);
      // A block with null content is a failed compaction, which Anthropic treats as a no-op.
      if (block.content !== null && block.content !== undefined) {
        const text = typeof block.content === 'string' ? block.content : '';
        const signature = typeof block.signature === 'string' ? block.signature : '';
        // The block opens the conversation the backend sees, which must start with the user.
        out.push({
          role: 'user',
          content: [{ type: 'text', text: await this.opened(signature, text, owner) }],
        });
      }
      if (rest.length > 0) out.push({ ...m, content: rest });
    }
    return out;
  }

  /** A block's text once its signature verifies for it and for this request's owner; counted either way. */
  private async opened(signature: string, text: string, owner: string | undefined): Promise<string> {
    try {
      const expanded = await this.handles.expand(signature, owner, text);
      this.reporter.handle('messages', expanded.outcome, {
        session: expanded.claims.session.slice(0, 8),
        owner_hash: owner ?? null,
      });
      return expanded.text;
    } catch (err) {
      if (err instanceof GuardianError) this.reporter.handleRefused('messages', err, owner);
      throw err;
    }
  }
}

/** Why Anthropic would refuse an on-demand compaction, or undefined. */
function onDemandRefusal(
  compaction: unknown,
  managed: unknown,
  messages: readonly unknown[],
): string | undefined {
  if (!isObj(compaction) || compaction.type !== 'summarize')
    return 'compaction: only {"type": "summarize"} is supported';
  // As Anthropic refuses them: the two mechanisms together, and a conversation that ends in an unanswered call.
  if (managed !== undefined) return 'compaction cannot be combined with context_management';
  if (endsInToolCall(messages))
    return 'the conversation ends in a tool_use without its tool_result; answer it before compacting';
  return undefined;
}

const blocksOf = (m: unknown): unknown[] =>
  isObj(m) && Array.isArray(m.content) ? (m.content as unknown[]) : [];
const isCompaction = (b: unknown): boolean => isObj(b) && b.type === 'compaction';
const hasCompactionBlock = (m: unknown): boolean => blocksOf(m).some(isCompaction);

function endsInToolCall(messages: readonly unknown[]): boolean {
  const last = messages.at(-1);
  return (
    isObj(last) &&
    last.role === 'assistant' &&
    Array.isArray(last.content) &&
    (last.content as unknown[]).some((b) => isObj(b) && b.type === 'tool_use')
  );
}
