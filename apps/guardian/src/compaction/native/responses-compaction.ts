import { Injectable } from '@nestjs/common';

import type { NativeEntry } from '@guardian/telemetry';

import type { OwnedRoute } from '../../formats/owned-route';
import { GuardianError } from '../../http/http-error';
import type { PrepareInput } from '../handoff';
import { json_, type NativeOutcome } from './native-outcome';
import { NativeReporter } from './native-reporter';
import { NativeStretch } from './native-stretch';
import { ResponsesItems, isCompactionItem } from './responses-items';
import { compactedResponse, isObj, triggerEvents, triggerResponse } from './responses-shapes';
import { ResponsesThreshold } from './responses-threshold';

/** Codex keeps user messages up to this many tokens when it compacts locally; the compact endpoint retains as much. */
const RETAINED_USER_TOKENS = 64_000;

type Inputs = (body: Buffer, route: OwnedRoute) => PrepareInput;

/**
 * The OpenAI Responses compaction protocol served for a backend that has none (issue 27 item 1): `/v1/responses/compact`
 * and a trailing `compaction_trigger` are answered with guardian's own summary behind a sealed handle;
 * `context_management` compaction compacts a turn over its threshold and puts the item first in the backend's answer
 * (ResponsesThreshold); a compaction item sent back is expanded into guardian's summary block (ResponsesItems), so the
 * backend never sees one. Undefined: not ours.
 */
@Injectable()
export class ResponsesCompaction {
  constructor(
    private readonly stretch: NativeStretch,
    private readonly items: ResponsesItems,
    private readonly threshold: ResponsesThreshold,
    private readonly reporter: NativeReporter,
  ) {}

  /** `compact`: the request came to `/v1/responses/compact`, else to `/v1/responses`. */
  async intercept(body: Buffer, compact: boolean, inputFor: Inputs): Promise<NativeOutcome | undefined> {
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
    const owner = inputFor(body, 'responses').owner?.ownerHash;
    const entry: NativeEntry = compact
      ? 'responses_compact'
      : trigger
        ? 'responses_trigger'
        : 'responses_threshold';
    try {
      const given = trigger ? items.slice(0, -1) : items;
      if (compact || trigger)
        return await this.compact(json, given, inputFor, { endpoint: compact, owner, entry });
      // context_management is not a field the backend knows: guardian applies it, or its own budget compacts.
      const { context_management: managed, ...rest } = json;
      const request = { ...rest, input: await this.items.expand(given, 'developer', owner) };
      if (managed === undefined) return { kind: 'forward', body: Buffer.from(JSON.stringify(request)) };
      return await this.threshold.apply(request, managed, inputFor);
    } catch (err) {
      if (!(err instanceof GuardianError)) throw err;
      // A handle refused is counted as such by ResponsesItems; anything else is this entry point refusing.
      if (!err.code.startsWith('GUARDIAN_COMPACTION_HANDLE'))
        this.reporter.entry(entry, 'refused', 'responses');
      return { kind: 'refuse', error: err };
    }
  }

  /** Summarise the whole conversation once and answer the handle, as the endpoint or as the trigger's response. */
  private async compact(
    json: Record<string, unknown>,
    given: unknown[],
    inputFor: Inputs,
    opts: { endpoint: boolean; owner: string | undefined; entry: NativeEntry },
  ): Promise<NativeOutcome> {
    const model = typeof json.model === 'string' ? json.model : '';
    const input = await this.items.expand(given, 'user', opts.owner);
    const request = { model, input, instructions: json.instructions };
    const done = await this.stretch.compact(inputFor(Buffer.from(JSON.stringify(request)), 'responses'), {
      sealContent: false,
    });
    this.reporter.entry(opts.entry, 'applied', 'responses', done.said);
    if (opts.endpoint) {
      const retained = retainedUserItems(given, done.tokens);
      return json_(compactedResponse(retained, done.handle, done.usage));
    }
    const response = triggerResponse(model, done.handle, done.usage);
    return json.stream === true
      ? { kind: 'answer', contentType: 'text/event-stream; charset=utf-8', body: triggerEvents(response) }
      : json_(response);
  }
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
