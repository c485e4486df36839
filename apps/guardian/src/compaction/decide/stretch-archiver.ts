import { Injectable } from '@nestjs/common';

import type { SpanRef } from '@guardian/archive';
import { mergePins, tokensForChars } from '@guardian/compaction';

import type { RequestContext } from '../handoff';
import { SessionTable } from '../../state/session-table';
import { SpanRecorder } from './span-recorder';

/**
 * Writes what one request evicts: a summarised stretch, or a paste spilled whole. A paste is archived once per
 * session (issue 3 §8), whether it comes back to be cut again or is later evicted with a stretch.
 */
@Injectable()
export class StretchArchiver {
  constructor(
    private readonly recorder: SpanRecorder,
    private readonly sessions: SessionTable,
  ) {}

  /**
   * Archives an evicted stretch. A paste this session already archived whole (an oversized spill) is not written a
   * second time (issue 3 §8: once per session; the bench counts duplicated archived messages): its span is named
   * instead. `span` is undefined only when a needed write failed (deferred, ARCHITECTURE.md#fail-open rule 3).
   */
  async stretch(
    ctx: RequestContext,
    evicted: readonly number[],
    o: { kind: 'compaction' | 'continuation'; summary: string; continues?: string; from: number },
  ): Promise<{ span?: string; refs: string[]; written?: SpanRef }> {
    const { conv } = ctx;
    const spilled: string[] = [];
    const fresh: number[] = [];
    for (const i of evicted) {
      const known = this.sessions.spilled(ctx.session.hash, conv.messages[i]?.digest ?? '');
      if (known) spilled.push(known.ref);
      else fresh.push(i);
    }
    const refs = mergePins(spilled);
    if (fresh.length === 0) return { span: refs.at(-1), refs };
    const written = await this.recorder.write({
      kind: o.kind,
      sessionHash: ctx.session.hash,
      ownerHash: ctx.session.ownerHash,
      sessionName: ctx.session.name,
      route: conv.route,
      model: conv.model,
      messages: fresh.map((i) => conv.items[i]),
      firstIndex: fresh[0] ?? o.from,
      summary: o.summary,
      continues: o.continues,
      tokensBefore: ctx.count.tokens,
      at: new Date(),
    });
    if (!written) return { refs };
    return { span: written.ref, refs: [...refs, written.ref], written };
  }

  /** The oversized message's span: written once per session and paste (the same paste comes back every turn). */
  async spill(ctx: RequestContext, index: number): Promise<SpanRef | undefined> {
    const m = ctx.conv.messages[index];
    if (!m) return undefined;
    const known = this.sessions.spilled(ctx.session.hash, m.digest);
    if (known) return known;
    const ref = await this.recorder.write({
      kind: 'oversized',
      sessionHash: ctx.session.hash,
      ownerHash: ctx.session.ownerHash,
      sessionName: ctx.session.name,
      route: ctx.conv.route,
      model: ctx.conv.model,
      messages: [ctx.conv.items[index]],
      firstIndex: index,
      originalTokens: tokensForChars(m.chars, ctx.count.counter),
      tokensBefore: ctx.count.tokens,
      at: new Date(),
    });
    if (ref) this.sessions.rememberSpill(ctx.session.hash, m.digest, ref);
    return ref;
  }
}
