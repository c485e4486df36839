import { Injectable } from '@nestjs/common';

import { tokensForChars } from '@guardian/compaction';
import { MemoStore, type MemoEntry } from '@guardian/memo';

import { GuardianConfig } from '../../config/guardian-config';
import { GuardianError } from '../../http/http-error';
import type { PrepareInput } from '../handoff';
import { StretchService } from '../decide/stretch-service';
import { conversationPrefixHashes } from '../../formats/format-adapter';
import { RequestStage } from '../request/request-stage';
import { contentHash, type HandleClaims, type HandleKind } from './compaction-handle';
import { nativeBlock, nativeCarried, NativeHandles } from './native-handles';
import type { NativeSaid } from './native-reporter';

/** One native compaction: the handle that names it, its summary block, and what it cost. */
export interface NativeCompacted {
  handle: string;
  block: string;
  usage: { inputTokens: number; outputTokens: number };
  /** The token estimate of a text, by this request's counter. */
  tokens: (chars: number) => number;
  /** What its event says of the request (session, owner, model; counts only). */
  said: NativeSaid;
}

/**
 * The engine's side of a native compaction, shared by the routes: the whole conversation summarised as one stretch
 * (summariser, memo, archive and lock: StretchService), and sealed behind a handle (NativeHandles).
 */
@Injectable()
export class NativeStretch {
  constructor(
    private readonly config: GuardianConfig,
    private readonly requests: RequestStage,
    private readonly stretches: StretchService,
    private readonly memo: MemoStore,
    private readonly handles: NativeHandles,
  ) {}

  /**
   * `sealContent`: the handle vouches for the block's text too (Anthropic's readable `content`); `instructions`: the
   * client's own, added to guardian's summary prompt; `kind`: what the handle stands for (compaction-handle.ts).
   */
  async compact(
    input: PrepareInput,
    opts: { sealContent: boolean; instructions?: string | null | undefined; kind?: HandleKind },
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
    const carried = nativeCarried(
      { summary: entry.summary, mustKeep: entry.mustKeep, messages: ctx.conv.messages, cut },
      this.config.compaction,
    );
    const kept: MemoEntry = { ...entry, mustKeep: carried.mustKeep };
    if (carried.ledger.length > 0) kept.ledger = carried.ledger;
    else delete kept.ledger;
    await this.memo.put(ctx.session.stateHash, kept);
    const claims: HandleClaims = {
      session: ctx.session.stateHash,
      from: 0,
      cut,
      memoKey: hashes[cut] ?? entry.prefixHash,
      chainHead: entry.spans.at(-1) ?? null,
      owner: ctx.session.ownerHash ?? null,
      ...(opts.kind === 'threshold' ? { kind: opts.kind } : {}),
    };
    const block = nativeBlock(claims, kept);
    const tokens = (chars: number): number => tokensForChars(chars, ctx.count.counter);
    return {
      handle: await this.handles.issue(
        opts.sealContent ? { ...claims, content: contentHash(block) } : claims,
      ),
      block,
      usage: { inputTokens: ctx.count.tokens, outputTokens: tokens(entry.summary.length) },
      tokens,
      said: {
        model: ctx.conv.model,
        session: ctx.session.hash.slice(0, 8),
        owner_hash: ctx.session.ownerHash ?? null,
        tokens_before: ctx.count.tokens,
        pins: carried.mustKeep.length,
        ledger: carried.ledger.length,
      },
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
}
