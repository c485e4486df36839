import { createHash } from 'node:crypto';

import { Injectable } from '@nestjs/common';

import { carriedPins, pinsByMessage, renderSummaryBlock, tokensForChars } from '@guardian/compaction';
import { MemoStore, type MemoEntry } from '@guardian/memo';

import { GuardianConfig } from '../../config/guardian-config';
import { GuardianError } from '../../http/http-error';
import type { PrepareInput } from '../handoff';
import { pendingStart, StretchService } from '../decide/stretch-service';
import { conversationPrefixHashes } from '../request/conversation-reader';
import { RequestStage } from '../request/request-stage';
import { handleRefused, HandleSealer, type HandleClaims } from './compaction-handle';

/** One native compaction: the handle that names it, its summary block, and what it cost. */
export interface NativeCompacted {
  handle: string;
  block: string;
  usage: { inputTokens: number; outputTokens: number };
  /** The token estimate of a text, by this request's counter. */
  tokens: (chars: number) => number;
}

export const contentHash = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The engine's side of a native compaction, shared by the routes: the whole conversation summarised as one stretch
 * (summariser, memo, archive and lock: StretchService), and a handle opened back into guardian's summary block.
 */
@Injectable()
export class NativeStretch {
  constructor(
    private readonly config: GuardianConfig,
    private readonly requests: RequestStage,
    private readonly stretches: StretchService,
    private readonly memo: MemoStore,
    private readonly sealer: HandleSealer,
  ) {}

  /**
   * `sealContent`: the handle vouches for the block's text too (Anthropic's readable `content`); `instructions`: the
   * client's own, added to guardian's summary prompt.
   */
  async compact(
    input: PrepareInput,
    opts: { sealContent: boolean; instructions?: string | null | undefined },
  ): Promise<NativeCompacted> {
    const read = await this.requests.read(input);
    if (read.kind === 'unchanged')
      throw new GuardianError('GUARDIAN_BAD_REQUEST', 'nothing in this request to compact', 400);
    // The protocol's request cannot go to the backend: as after an overflow, a checkpoint serves when no summary can
    // be had (ADR 0007), so the client always gets its compaction.
    const ctx = { ...read.ctx, reason: 'overflow' as const };
    const hashes = conversationPrefixHashes(ctx.conv);
    const cut = ctx.conv.messages.length;
    const instructions = opts.instructions ?? undefined;
    const { entry } = await this.stretches.summarise(ctx, hashes, undefined, 0, cut, { instructions });
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
    await this.memo.put(ctx.session.stateHash, kept);
    const claims: HandleClaims = {
      session: ctx.session.stateHash,
      from: 0,
      cut,
      memoKey: hashes[cut] ?? entry.prefixHash,
      chainHead: entry.spans.at(-1) ?? null,
    };
    const block = blockText(claims, kept);
    const tokens = (chars: number): number => tokensForChars(chars, ctx.count.counter);
    return {
      handle: this.sealer.seal(opts.sealContent ? { ...claims, content: contentHash(block) } : claims),
      block,
      usage: { inputTokens: ctx.count.tokens, outputTokens: tokens(entry.summary.length) },
      tokens,
    };
  }

  /**
   * The request's input tokens and its estimate of a character count, as guardian's budget measures them (the
   * context-editing triggers compare against it); undefined when the request stage does not read this request.
   */
  async measure(
    input: PrepareInput,
  ): Promise<{ total: number; tokens: (chars: number) => number } | undefined> {
    const read = await this.requests.read(input);
    if (read.kind === 'unchanged') return undefined;
    const { counter } = read.ctx.count;
    return { total: read.ctx.count.tokens, tokens: (chars) => tokensForChars(chars, counter) };
  }

  /** The summary block a handle stands for; refuses a handle that does not verify (or does not match `content`). */
  async expand(handle: string, content?: string): Promise<string> {
    const claims = this.sealer.open(handle);
    if (content !== undefined && claims.content !== contentHash(content)) throw handleRefused();
    if (content !== undefined) return content;
    return blockText(claims, await this.memo.get(claims.session, claims.memoKey));
  }
}

function blockText(claims: HandleClaims, entry: MemoEntry | undefined): string {
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
  });
}
