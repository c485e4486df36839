import { Injectable } from '@nestjs/common';

import { carriedPins, pinsByMessage, renderSummaryBlock, tokensForChars } from '@guardian/compaction';
import { MemoStore, type MemoEntry } from '@guardian/memo';

import { GuardianConfig } from '../../config/guardian-config';
import { pathOnly } from '../../formats/owned-route';
import { GuardianError } from '../../http/http-error';
import type { PrepareInput } from '../handoff';
import { pendingStart, StretchService } from '../decide/stretch-service';
import { conversationPrefixHashes } from '../request/conversation-reader';
import { RequestStage } from '../request/request-stage';
import { HandleSealer, type HandleClaims } from './compaction-handle';
import { nativeMode } from './native-mode';
import {
  COMPACTION_ITEM_TYPES,
  compactedResponse,
  isObj,
  triggerEvents,
  triggerResponse,
} from './responses-shapes';

/** What guardian does with a request that speaks a compaction protocol (docs/native-compaction.md). */
export type NativeOutcome =
  | { kind: 'refuse'; error: GuardianError }
  | { kind: 'answer'; contentType: string; body: string }
  | { kind: 'forward'; body: Buffer };

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
    private readonly requests: RequestStage,
    private readonly stretches: StretchService,
    private readonly memo: MemoStore,
    private readonly sealer: HandleSealer,
  ) {}

  async intercept(
    method: string,
    url: string,
    body: Buffer | undefined,
    inputFor: (body: Buffer) => PrepareInput,
  ): Promise<NativeOutcome | undefined> {
    if (method !== 'POST' || !body || nativeMode(this.config) === 'passthrough') return undefined;
    const path = pathOnly(url).replace(/\/+$/, '');
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
    try {
      const trigger =
        isObj(items.at(-1)) && (items.at(-1) as { type?: unknown }).type === 'compaction_trigger';
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

  /** Summarise the whole conversation once (memo, archive, lock: the engine's stretch), and answer the handle. */
  private async compact(
    json: Record<string, unknown>,
    given: unknown[],
    inputFor: (body: Buffer) => PrepareInput,
    endpoint: boolean,
  ): Promise<NativeOutcome> {
    const model = typeof json.model === 'string' ? json.model : '';
    const request = { model, input: await this.expand(given, 'user'), instructions: json.instructions };
    const read = await this.requests.read(inputFor(Buffer.from(JSON.stringify(request))));
    if (read.kind === 'unchanged')
      throw new GuardianError('GUARDIAN_BAD_REQUEST', 'nothing in this request to compact', 400);
    // The trigger cannot go to the backend: as after an overflow, a checkpoint serves when no summary can be had
    // (ADR 0007), so the client always gets its compaction item.
    const ctx = { ...read.ctx, reason: 'overflow' as const };
    const hashes = conversationPrefixHashes(ctx.conv);
    const cut = ctx.conv.messages.length;
    const { entry } = await this.stretches.summarise(ctx, hashes, undefined, 0, cut);
    // Pins are derived from the messages a client resends; after a native compaction it resends none of them, so the
    // memo entry carries them for the expansion.
    const pins = carriedPins({
      byMessage: pinsByMessage(ctx.conv.messages),
      cut,
      mustKeep: entry.mustKeep,
      summary: entry.summary,
      maxChars: this.config.compaction.pinMaxChars,
    });
    const kept: MemoEntry = { ...entry, mustKeep: [...new Set([...pins, ...entry.mustKeep])] };
    await this.memo.put(ctx.session.hash, kept);
    const handle = this.sealer.seal({
      session: ctx.session.hash,
      from: 0,
      cut,
      memoKey: hashes[cut] ?? entry.prefixHash,
      chainHead: entry.spans.at(-1) ?? null,
    });
    const usage = {
      inputTokens: ctx.count.tokens,
      outputTokens: tokensForChars(entry.summary.length, ctx.count.counter),
    };
    if (endpoint) {
      const retained = retainedUserItems(given, (chars) => tokensForChars(chars, ctx.count.counter));
      return {
        kind: 'answer',
        contentType: 'application/json',
        body: JSON.stringify(compactedResponse(retained, handle, usage)),
      };
    }
    const response = triggerResponse(model, handle, usage);
    return json.stream === true
      ? { kind: 'answer', contentType: 'text/event-stream; charset=utf-8', body: triggerEvents(response) }
      : { kind: 'answer', contentType: 'application/json', body: JSON.stringify(response) };
  }

  /** Each compaction item of ours replaced by guardian's summary block; one that does not verify is refused. */
  private async expand(items: unknown[], role: 'developer' | 'user'): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const item of items) {
      if (!isObj(item) || typeof item.type !== 'string' || !COMPACTION_ITEM_TYPES.has(item.type)) {
        out.push(item);
        continue;
      }
      const handle = typeof item.encrypted_content === 'string' ? item.encrypted_content : '';
      const claims = this.sealer.open(handle);
      out.push({
        type: 'message',
        role,
        content: [{ type: 'input_text', text: await this.blockOf(claims) }],
      });
    }
    return out;
  }

  private async blockOf(claims: HandleClaims): Promise<string> {
    const entry = await this.memo.get(claims.session, claims.memoKey);
    return renderSummaryBlock({
      // An entry evicted from the memo: the handle still names where the originals are sealed.
      summary:
        entry?.summary ??
        'The summary of this stretch is no longer held in memory; the archived span named above holds the originals.',
      evictedMessages: claims.cut - claims.from,
      spans: entry?.spans ?? (claims.chainHead ? [claims.chainHead] : []),
      spanTotal: entry?.spanTotal,
      deferred: entry ? pendingStart(entry) !== undefined : false,
      pins: entry?.mustKeep ?? [],
      summaryMaxChars: undefined,
    });
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
