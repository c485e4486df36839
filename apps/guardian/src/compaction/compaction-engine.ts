import { Injectable } from '@nestjs/common';

import {
  capPins,
  checkpointSummary,
  extractPins,
  largestSpillable,
  mergePins,
  messageTokens,
  mustKeepBullets,
  planCompaction,
  prefixHashes,
  renderSummaryBlock,
  spillPointer,
  spillText,
  tokensAfterCut,
  tokensForChars,
  transcriptLine,
  type PlanInput,
} from '@guardian/compaction';
import { MemoStore, type MemoEntry } from '@guardian/memo';
import { logOnce } from '@guardian/telemetry';

import { GuardianConfig } from '../config/guardian-config';
import { Observability } from '../observability/observability';
import type { Decision, RequestContext } from './compaction-context';
import { fillDigests } from './formats/format-adapter';
import { SessionTable } from './session-table';
import { SpanRecorder } from './span-recorder';
import { StretchArchiver } from './stretch-archiver';
import { SummariseError, Summariser, type SummaryResult } from './summariser';

interface Built {
  body: Buffer;
  tokensAfter: number;
  rawForwarded: number;
  pins: number;
  spilled: number;
}

interface StretchResult {
  entry: MemoEntry;
  calls: number;
  chunked: boolean;
  deferred: boolean;
  run: string | null;
  span: number | null;
}

/**
 * Decides and rebuilds one over-budget request (CONTRACTS §3): reuse the memoized cut while it fits, else summarise
 * the next stretch (extending the memo's summary), archive it, place the summary, carry the pins, and as a last
 * resort spill the largest pasted message. Throws only for the caller to fail open.
 */
@Injectable()
export class CompactionEngine {
  private readonly inflight = new Map<string, Promise<StretchResult>>();
  private readonly archiver: StretchArchiver;

  constructor(
    private readonly config: GuardianConfig,
    private readonly summariser: Summariser,
    private readonly memo: MemoStore,
    private readonly recorder: SpanRecorder,
    private readonly obs: Observability,
    sessions: SessionTable,
  ) {
    this.archiver = new StretchArchiver(recorder, sessions);
  }

  async decide(ctx: RequestContext): Promise<Decision> {
    const { conv, count, budget } = ctx;
    const unchanged: Decision = {
      outcome: 'passthrough',
      tokensBefore: count.tokens,
      tokensAfter: count.tokens,
      rawForwarded: count.rawEstimate,
    };
    if (count.tokens <= budget.budget) return unchanged;

    fillDigests(conv);
    const hashes = prefixHashes(conv.messages);
    const memo = await this.lookup(ctx, hashes);
    const planInput: PlanInput = {
      messages: conv.messages,
      fixedChars: conv.fixedChars,
      counter: count.counter,
      budget,
      keep: {
        fraction: this.config.env.GUARDIAN_KEEP_RECENT_FRACTION,
        messages: this.config.env.GUARDIAN_KEEP_RECENT_MESSAGES,
      },
      requestTokens: count.tokens,
      memo: memo ? { cut: memo.cut, summaryTokens: this.blockTokens(ctx, memo, memo.cut) } : undefined,
    };
    const plan = planCompaction(planInput);
    if (plan.action === 'fits') return unchanged;

    if (ctx.dryRun) {
      this.logDecision(
        ctx,
        { ...unchanged, outcome: 'dry_run' },
        {
          evicted: plan.action === 'compact' ? plan.cut : 0,
          reused: plan.action === 'reuse',
          calls: 0,
          chunked: false,
          pins: 0,
          spilled: 0,
          deferred: false,
          run: null,
          span: null,
          dryRun: true,
        },
      );
      return { ...unchanged, outcome: 'dry_run' };
    }

    let stretch: StretchResult | undefined;
    if (plan.action === 'reuse' && memo) {
      stretch = {
        entry: await this.ensureArchived(ctx, memo),
        calls: 0,
        chunked: false,
        deferred: false,
        run: null,
        span: null,
      };
      this.obs.state.summariesReused += 1;
      this.obs.metrics.summariesReused.inc();
    } else if (plan.action === 'compact' && this.worthSummarising(ctx, plan.from, plan.cut)) {
      stretch = await this.stretch(ctx, hashes, memo, plan.from, plan.cut);
    }

    let built = await this.build(ctx, planInput, stretch?.entry);
    if (stretch && built.tokensAfter >= count.tokens) {
      // The summary came out no smaller than what it replaced (a short stretch before a huge paste, as Codex and
      // Qwen Code send on their first turn: docs/WORKS_WITH.md). Forwarding it would only grow the request; the
      // spill alone may still help. The stretch stays archived and memoized.
      const spillOnly = await this.build(ctx, planInput, undefined);
      if (spillOnly.spilled === 0 || spillOnly.tokensAfter >= count.tokens) return unchanged;
      stretch = undefined;
      built = spillOnly;
    }
    const outcome: Decision['outcome'] = stretch ? (stretch.calls > 0 ? 'compacted' : 'reused') : 'spilled';
    if (outcome === 'spilled' && built.spilled === 0) return unchanged; // nothing could help: forward as sent
    const decision: Decision = {
      outcome,
      body: built.body,
      tokensBefore: count.tokens,
      tokensAfter: built.tokensAfter,
      rawForwarded: built.rawForwarded,
      compactedAt: new Date().toISOString(),
    };
    this.report(ctx, decision, stretch, built);
    this.logDecision(ctx, decision, {
      evicted: stretch ? countEvicted(ctx, stretch.entry.cut) : 0,
      reused: stretch !== undefined && stretch.calls === 0,
      calls: stretch?.calls ?? 0,
      chunked: stretch?.chunked ?? false,
      pins: built.pins,
      spilled: built.spilled,
      deferred: stretch?.deferred ?? false,
      run: stretch?.run ?? null,
      span: stretch?.span ?? null,
      dryRun: false,
    });
    return decision;
  }

  /**
   * A stretch shorter than GUARDIAN_MIN_TRANSCRIPT_CHARS is not summarised (the seed's rule); rather than fail open,
   * the request goes on to the spill, which may still make it fit.
   */
  private worthSummarising(ctx: RequestContext, from: number, cut: number): boolean {
    let chars = 0;
    for (let i = from; i < cut; i++) {
      const m = ctx.conv.messages[i];
      if (m && m.role !== 'system')
        chars += m.text.length + m.toolCalls.reduce((n, c) => n + c.args.length, 0);
    }
    return chars >= this.config.env.GUARDIAN_MIN_TRANSCRIPT_CHARS;
  }

  /** The memo entry for the longest known cut of this conversation, if any. */
  private async lookup(ctx: RequestContext, hashes: string[]): Promise<MemoEntry | undefined> {
    if (!this.config.env.GUARDIAN_SUMMARY_MEMO) return undefined;
    const cuts = (await this.memo.cuts(ctx.session.hash))
      .filter((c) => c > 0 && c < hashes.length)
      .sort((a, b) => b - a);
    for (const cut of cuts) {
      const hash = hashes[cut];
      if (!hash) continue;
      const entry = await this.memo.get(ctx.session.hash, hash);
      if (entry && entry.cut === cut) {
        this.obs.metrics.memoLookups.inc({ store: this.memo.kind, result: 'hit' });
        return entry;
      }
    }
    this.obs.metrics.memoLookups.inc({ store: this.memo.kind, result: 'miss' });
    return undefined;
  }

  /** One summariser run per stretch: concurrent requests for the same stretch share it (in process and across replicas). */
  private stretch(
    ctx: RequestContext,
    hashes: string[],
    memo: MemoEntry | undefined,
    from: number,
    cut: number,
  ): Promise<StretchResult> {
    const prefixHash = hashes[cut] ?? '';
    const key = `${ctx.session.hash}:${prefixHash}`;
    let p = this.inflight.get(key);
    if (p) return p.then((r) => ({ ...r, calls: 0, chunked: false }));
    p = this.summariseStretch(ctx, prefixHash, memo, from, cut).finally(() => this.inflight.delete(key));
    this.inflight.set(key, p);
    return p;
  }

  private async summariseStretch(
    ctx: RequestContext,
    prefixHash: string,
    memo: MemoEntry | undefined,
    from: number,
    cut: number,
  ): Promise<StretchResult> {
    const env = this.config.env;
    const lock = await this.memo.lock(ctx.session.hash, prefixHash, env.GUARDIAN_MEMO_LOCK_WAIT_MS + 10_000);
    try {
      if (!lock) {
        // Another replica is summarising this stretch: wait for its summary, else do it ourselves (CONTRACTS §2.4).
        const theirs = await this.memo.waitFor(ctx.session.hash, prefixHash, env.GUARDIAN_MEMO_LOCK_WAIT_MS);
        if (theirs)
          return { entry: theirs, calls: 0, chunked: false, deferred: false, run: null, span: null };
      } else {
        // Another replica may have stored this stretch and released its lock between our lookup and our lock.
        const stored = await this.memo.get(ctx.session.hash, prefixHash);
        if (stored?.cut === cut)
          return { entry: stored, calls: 0, chunked: false, deferred: false, run: null, span: null };
      }
      const { conv } = ctx;
      const lines: string[] = [];
      const evicted: number[] = [];
      for (let i = from; i < cut; i++) {
        const m = conv.messages[i];
        if (!m || m.role === 'system') continue;
        evicted.push(i);
        lines.push(transcriptLine(m, i, { toolArgChars: env.GUARDIAN_TOOL_ARG_CHARS }));
      }
      const input = {
        adapter: ctx.adapter,
        model: conv.model,
        headers: ctx.auth,
        lines,
        prior: from > 0 ? memo?.summary : undefined,
        window: ctx.budget.window,
        reserve: ctx.budget.reserve,
        counter: ctx.count.counter,
        signal: ctx.input.signal,
        route: conv.route,
      };
      let result: SummaryResult;
      let checkpoint = false;
      try {
        result = await this.summariser.summarise(input);
      } catch (err) {
        // Outside overflow recovery a failed summary fails open. Inside it, the upstream has already refused the
        // request as too long, so forwarding it unchanged is a certain failure: a checkpoint written without a model
        // answers the client instead (ADR 0007). The checkpoint is not memoized: the next turn tries a real summary.
        if (ctx.reason !== 'overflow' || !(err instanceof SummariseError)) throw err;
        const evictedMessages = evicted.map((i) => conv.messages[i]).filter((m) => m !== undefined);
        result = { summary: checkpointSummary(evictedMessages), calls: 0, chunked: false, retries: 0 };
        checkpoint = true;
        this.obs.state.summaryCheckpoints += 1;
        logOnce(
          this.obs.logger,
          `summary_checkpoint:${err.code}`,
          { code: err.code, route: conv.route, reqId: ctx.input.reqId },
          'summariser failed during overflow recovery; a checkpoint without a model summary was forwarded (logged once per reason)',
        );
      }
      if (result.chunked) {
        this.obs.state.summariesChunked += 1;
        this.obs.metrics.summariesChunked.inc();
        this.obs.state.emit({
          kind: 'summary_chunked',
          route: conv.route,
          model: conv.model,
          calls: result.calls,
        });
      }
      const archived = await this.archiver.stretch(ctx, evicted, {
        kind: from > 0 && memo ? 'continuation' : 'compaction',
        summary: result.summary,
        continues: from > 0 ? memo?.span : undefined,
        from,
      });
      const ref = archived.written;
      const entry: MemoEntry = {
        summary: result.summary,
        mustKeep: mergePins(memo?.mustKeep ?? [], mustKeepBullets(result.summary)),
        cut,
        from,
        prefixHash,
        span: archived.span,
        spans: mergePins(memo?.spans ?? [], archived.refs),
        summaryTokens: tokensForChars(result.summary.length, ctx.count.counter),
        createdAt: new Date().toISOString(),
      };
      if (env.GUARDIAN_SUMMARY_MEMO && !checkpoint) await this.memo.put(ctx.session.hash, entry);
      return {
        entry,
        calls: result.calls,
        chunked: result.chunked,
        deferred: archived.span === undefined,
        run: ref?.run ?? null,
        span: ref?.span ?? null,
      };
    } finally {
      await lock?.release();
    }
  }

  /** A reused stretch whose span was deferred gets written now, from the history this turn resent (CONTRACTS §2.3). */
  private async ensureArchived(ctx: RequestContext, entry: MemoEntry): Promise<MemoEntry> {
    if (entry.span) return entry;
    const from = entry.from ?? 0;
    const evicted: number[] = [];
    for (let i = from; i < entry.cut; i++) if (ctx.conv.messages[i]?.role !== 'system') evicted.push(i);
    const archived = await this.archiver.stretch(ctx, evicted, {
      kind: from > 0 ? 'continuation' : 'compaction',
      summary: entry.summary,
      continues: from > 0 ? entry.spans.at(-1) : undefined,
      from,
    });
    if (!archived.span) return entry;
    const updated = { ...entry, span: archived.span, spans: mergePins(entry.spans, archived.refs) };
    await this.memo.put(ctx.session.hash, updated);
    return updated;
  }

  private pinsFor(ctx: RequestContext, cut: number, mustKeep: readonly string[]): string[] {
    const max = this.config.env.GUARDIAN_PIN_MAX_CHARS;
    if (max <= 0) return [];
    const typed: string[][] = [];
    for (let i = 0; i < cut; i++) {
      const m = ctx.conv.messages[i];
      if (m?.userTyped) typed.push(extractPins(m.text));
    }
    return capPins(mergePins(...typed, mustKeep), max);
  }

  private renderBlock(ctx: RequestContext, entry: MemoEntry, pins: readonly string[]): string {
    return renderSummaryBlock({
      summary: entry.summary,
      evictedMessages: countEvicted(ctx, entry.cut),
      spans: entry.spans,
      deferred: entry.span === undefined,
      pins,
    });
  }

  private blockTokens(ctx: RequestContext, entry: MemoEntry, cut: number): number {
    return tokensForChars(
      this.renderBlock(ctx, entry, this.pinsFor(ctx, cut, entry.mustKeep)).length + 16,
      ctx.count.counter,
    );
  }

  /** Rebuilds the request around the entry's cut; sheds the oldest pins, then spills, while it does not fit. */
  private async build(
    ctx: RequestContext,
    planInput: PlanInput,
    entry: MemoEntry | undefined,
  ): Promise<Built> {
    const { conv, count, budget } = ctx;
    const cut = entry?.cut ?? 0;
    const keep: number[] = [];
    conv.messages.forEach((m, i) => {
      if (m.role === 'system' || i >= cut) keep.push(i);
    });
    let pins = entry ? this.pinsFor(ctx, cut, entry.mustKeep) : [];
    let block = entry ? this.renderBlock(ctx, entry, pins) : undefined;
    const tokensWith = (b: string | undefined) =>
      tokensAfterCut(planInput, cut, b === undefined ? 0 : tokensForChars(b.length + 16, count.counter));
    let tokens = tokensWith(block);
    while (entry && pins.length > 0 && tokens > budget.budget) {
      pins = pins.slice(1);
      block = this.renderBlock(ctx, entry, pins);
      tokens = tokensWith(block);
    }

    const replaceText = new Map<number, string>();
    let spilled = 0;
    if (tokens > budget.budget) {
      const kept = keep.map((i) => conv.messages[i]!).map((m) => m);
      const k = largestSpillable(kept.map((m, j) => (keep[j]! < cut ? { ...m, spillable: false } : m)));
      const index = k === undefined ? undefined : keep[k];
      const m = index === undefined ? undefined : conv.messages[index];
      if (index !== undefined && m) {
        const room = budget.budget - (tokens - messageTokens(m, count.counter));
        const ref = room >= 128 ? await this.archiver.spill(ctx, index) : undefined;
        const cutText =
          room >= 128
            ? spillText(m.text, {
                roomTokens: room,
                counter: count.counter,
                pointer: (omitted, original) =>
                  spillPointer({
                    position: index + 1,
                    originalTokens: original,
                    ref: ref?.ref,
                    omittedTokens: omitted,
                  }),
              })
            : undefined;
        if (cutText) {
          replaceText.set(index, cutText.text);
          spilled = 1;
          tokens =
            tokens - messageTokens(m, count.counter) + tokensForChars(cutText.text.length, count.counter);
        }
      }
    }

    const json = ctx.adapter.rebuild(conv, { keep, summaryBlock: block, replaceText });
    const body = Buffer.from(JSON.stringify(json));
    return {
      body,
      tokensAfter: tokens,
      rawForwarded: Math.ceil(tokens / Math.max(count.counter.factor, 0.01)),
      pins: pins.length,
      spilled,
    };
  }

  private report(ctx: RequestContext, d: Decision, stretch: StretchResult | undefined, built: Built): void {
    const { state, metrics } = this.obs;
    const route = ctx.conv.route;
    state.tokensKeptOut += Math.max(0, d.tokensBefore - d.tokensAfter);
    if (built.spilled > 0) {
      state.oversizedSpills += 1;
      metrics.oversizedSpills.inc({ route });
      if (!stretch)
        state.emit({
          kind: 'oversized_spill',
          route,
          model: ctx.conv.model,
          session: ctx.session.hash.slice(0, 8),
          tokens_before: d.tokensBefore,
          tokens_after: d.tokensAfter,
        });
    }
    if (!stretch) return;
    state.compactionsPerformed += 1;
    metrics.compactions.inc({ route, reason: ctx.reason ?? 'budget' });
    metrics.tokensBefore.observe({ route }, d.tokensBefore);
    metrics.tokensAfter.observe({ route }, d.tokensAfter);
    state.lastPinsCarried = built.pins;
    metrics.pinsCarried.set(built.pins);
    if (built.pins > 0) {
      state.compactionsWithPins += 1;
      metrics.compactionsWithPins.inc();
    }
    state.emit({
      kind: 'compaction',
      route,
      model: ctx.conv.model,
      session: ctx.session.hash.slice(0, 8),
      tokens_before: d.tokensBefore,
      tokens_after: d.tokensAfter,
      summary_reused: stretch.calls === 0,
      summariser_calls: stretch.calls,
      pins: built.pins,
      oversized_spilled: built.spilled,
      archive_deferred: stretch.deferred,
    });
  }

  /** Queues the compaction log line (and its receipt) behind the request: two fsynced appends the client need not wait for. */
  private logDecision(
    ctx: RequestContext,
    d: Decision,
    f: {
      evicted: number;
      reused: boolean;
      calls: number;
      chunked: boolean;
      pins: number;
      spilled: number;
      deferred: boolean;
      run: string | null;
      span: number | null;
      dryRun: boolean;
    },
  ): void {
    this.recorder.logLineLater(
      {
        run: f.run,
        span: f.span,
        session_hash: ctx.session.hash,
        owner_hash: null,
        route: ctx.conv.route,
        model: ctx.conv.model,
        window: ctx.window.window,
        tokens_before: d.tokensBefore,
        tokens_after: d.tokensAfter,
        count_source: ctx.count.source,
        evicted_messages: f.evicted,
        summary_reused: f.reused,
        summariser_calls: f.calls,
        chunked: f.chunked,
        oversized_spilled: f.spilled,
        pins: f.pins,
        archive_deferred: f.deferred,
        dry_run: f.dryRun,
      },
      d.tokensBefore,
      d.tokensAfter,
    );
  }
}

function countEvicted(ctx: RequestContext, cut: number): number {
  let n = 0;
  for (let i = 0; i < cut; i++) if (ctx.conv.messages[i]?.role !== 'system') n += 1;
  return n;
}
