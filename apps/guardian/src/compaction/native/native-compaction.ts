import { Injectable } from '@nestjs/common';

import { GuardianConfig } from '../../config/guardian-config';
import { pathOnly, type OwnedRoute } from '../../formats/owned-route';
import { GuardianError } from '../../http/http-error';
import type { PrepareInput } from '../handoff';
import { MessagesCompaction } from './messages-compaction';
import { nativeMode } from './native-mode';
import { json_, type NativeOutcome } from './native-outcome';
import { NativeStretch } from './native-stretch';
import {
  COMPACTION_ITEM_TYPES,
  compactedResponse,
  isObj,
  triggerEvents,
  triggerResponse,
} from './responses-shapes';

export type { NativeOutcome } from './native-outcome';

/** Codex keeps user messages up to this many tokens when it compacts locally; the compact endpoint retains as much. */
const RETAINED_USER_TOKENS = 64_000;

/**
 * The OpenAI Responses compaction protocol served for a backend that has none (issue 27 item 1): `/v1/responses/compact`
 * and a trailing `compaction_trigger` are answered with guardian's own summary behind a sealed handle; a compaction
 * item sent back is expanded into guardian's summary block, so the backend never sees one. Undefined: not ours.
 */
@Injectable()
export class NativeCompaction {
  constructor(
    private readonly config: GuardianConfig,
    private readonly stretch: NativeStretch,
    private readonly messages: MessagesCompaction,
  ) {}

  async intercept(
    method: string,
    url: string,
    body: Buffer | undefined,
    inputFor: (body: Buffer, route: OwnedRoute) => PrepareInput,
  ): Promise<NativeOutcome | undefined> {
    if (method !== 'POST' || !body || nativeMode(this.config) === 'passthrough') return undefined;
    const path = pathOnly(url).replace(/\/+$/, '');
    if (path === '/v1/messages' || path === '/messages') return this.messages.intercept(body, inputFor);
    const compact = path === '/v1/responses/compact' || path === '/responses/compact';
    if (!compact && path !== '/v1/responses' && path !== '/responses') return undefined;
    // Every request that speaks the protocol names it; the rest are not parsed here (ADR 0013: the hot path).
    if (!compact && !body.includes('compaction') && !body.includes('context_management')) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      // Not JSON: the backend's own 400 says so better than we would.
      return undefined;
    }
    if (!isObj(json)) return undefined;
    const items = typeof json.input === 'string' ? [userItem(json.input)] : json.input;
    if (!Array.isArray(items)) return undefined;
    const trigger = isObj(items.at(-1)) && (items.at(-1) as { type?: unknown }).type === 'compaction_trigger';
    // A prompt that only mentions the word goes on as its bytes (ADR 0005): only the protocol's own field and items
    // are rewritten.
    if (!compact && !trigger && !('context_management' in json) && !items.some(isCompactionItem))
      return undefined;
    try {
      const given = trigger ? items.slice(0, -1) : items;
      if (compact || trigger) return await this.compact(json, given, inputFor, compact);
      // context_management is not a field the backend knows; guardian's own budget compacts this request instead.
      const { context_management: _dropped, ...rest } = json;
      const forwarded = { ...rest, input: await this.expand(given, 'developer') };
      return { kind: 'forward', body: Buffer.from(JSON.stringify(forwarded)) };
    } catch (err) {
      if (err instanceof GuardianError) return { kind: 'refuse', error: err };
      throw err;
    }
  }

  /** Summarise the whole conversation once and answer the handle, as the endpoint or as the trigger's response. */
  private async compact(
    json: Record<string, unknown>,
    given: unknown[],
    inputFor: (body: Buffer, route: OwnedRoute) => PrepareInput,
    endpoint: boolean,
  ): Promise<NativeOutcome> {
    const model = typeof json.model === 'string' ? json.model : '';
    const request = { model, input: await this.expand(given, 'user'), instructions: json.instructions };
    const done = await this.stretch.compact(inputFor(Buffer.from(JSON.stringify(request)), 'responses'), {
      sealContent: false,
    });
    if (endpoint) {
      const retained = retainedUserItems(given, done.tokens);
      return json_(compactedResponse(retained, done.handle, done.usage));
    }
    const response = triggerResponse(model, done.handle, done.usage);
    return json.stream === true
      ? { kind: 'answer', contentType: 'text/event-stream; charset=utf-8', body: triggerEvents(response) }
      : json_(response);
  }

  /** Each compaction item of ours replaced by guardian's summary block; one that does not verify is refused. */
  private async expand(items: unknown[], role: 'developer' | 'user'): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const item of items) {
      if (!isCompactionItem(item) || !isObj(item)) {
        out.push(item);
        continue;
      }
      const handle = typeof item.encrypted_content === 'string' ? item.encrypted_content : '';
      const text = await this.stretch.expand(handle);
      out.push({ type: 'message', role, content: [{ type: 'input_text', text }] });
    }
    return out;
  }
}

function isCompactionItem(item: unknown): boolean {
  return isObj(item) && typeof item.type === 'string' && COMPACTION_ITEM_TYPES.has(item.type);
}

function userItem(text: string): Record<string, unknown> {
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
}

/** The user messages, newest first within RETAINED_USER_TOKENS, in their order (what OpenAI's compact keeps). */
function retainedUserItems(items: readonly unknown[], tokens: (chars: number) => number): unknown[] {
  const kept: unknown[] = [];
  let used = 0;
  for (let i = items.length - 1; i >= 0; i -= 1) {
    const item = items[i];
    if (!isObj(item) || item.role !== 'user' || (item.type !== undefined && item.type !== 'message'))
      continue;
    used += tokens(JSON.stringify(item.content ?? '').length);
    if (used > RETAINED_USER_TOKENS) break;
    kept.unshift(item);
  }
  return kept;
}
