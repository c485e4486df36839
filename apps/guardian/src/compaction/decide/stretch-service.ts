import { Injectable } from '@nestjs/common';

import {
  carriedAnchors,
  checkpointSummary,
  evictedIndexes,
  groupForPrompts,
  hashTexts,
  maxSummaryTokens,
  mergePins,
  mustKeepBullets,
  summaryPromptLimit,
  tokensForChars,
  transcriptLine,
  transcriptLineMaxChars,
} from '@guardian/compaction';
import { MemoStore, type MemoEntry } from '@guardian/memo';

import { GuardianConfig } from '../../config/guardian-config';
import type { RequestContext } from '../handoff';
import { StageFailure } from '../compaction-errors';
import { DecideReporter } from './decide-reporter';
import { StretchArchiver } from './stretch-archiver';
import { SummariseError, Summariser, type SummaryResult } from './summariser';

/** The newest span refs a memo entry keeps (the block names fewer; the recall tools list them all). */
export const MAX_MEMO_SPANS = 16;
/** The newest `## Must Keep` bullets a memo entry keeps: a model's list must not grow an entry without bound. */
export const MAX_MEMO_BULLETS = 64;

/** One stretch as this request has it: the memo entry that stands for it, and what getting it cost. */
export interface StretchResult {
  entry: MemoEntry;
  calls: number;
  chunked: boolean;
  /** True while some of the entry's messages could not be archived (ARCHITECTURE.md#fail-open rule 3). */
  deferred: boolean;
  /** The span this request wrote, for the compaction log line. */
  run: string | null;
  span: number | null;
  /** The request waited on a summariser: its own call, or one under way for the same stretch (issue 14). */
  waited: boolean;
}

/** Where an entry's unarchived messages start, if any. */
export function pendingStart(entry: MemoEntry | undefined): number | undefined {
  if (!entry) return undefined;
  if (entry.pendingFrom !== undefined) return entry.pendingFrom;
  return entry.span === undefined ? (entry.from ?? 0) : undefined;
}

/**
 * The memo side of compaction (ARCHITECTURE.md#sessions, ARCHITECTURE.md#fail-open, ARCHITECTURE.md#compaction):
 * finds the conversation's sticky cut, summarises a new stretch once (in this process and across replicas), archives
 * what it evicts, and writes a stretch that an earlier turn could not archive as soon as a turn resends it. Throws
 * only for the caller to fail open.
 */
@Injectable()
export class StretchService {
  private readonly inflight = new Map<string, Promise<StretchResult>>();

  constructor(
    private readonly config: GuardianConfig,
    private readonly summariser: Summariser,
    private readonly memo: MemoStore,
    private readonly archiver: StretchArchiver,
    private readonly reporter: DecideReporter,
  ) {}

  /**
   * Every memo entry of this conversation, ascending by cut: the sticky cut, and any later one summarised ahead of
   * need (issue 14). An entry matches only when the request's prefix up to its cut hashes the same
   * (ARCHITECTURE.md#sessions). `counted: false` for a look that serves no request (a token count's forecast): it
   * stays out of the memo lookup metric.
   */
  async lookup(
    ctx: RequestContext,
    hashes: readonly string[],
    opts: { counted: boolean } = { counted: true },
  ): Promise<MemoEntry[]> {
    if (!this.config.summariser.memo) return [];
    const cuts = (await this.memo.cuts(ctx.session.stateHash)).filter((c) => c > 0 && c < hashes.length);
    const found = await Promise.all(
      [...new Set(cuts)].map(async (cut) => {
        const entry = await this.memo.get(ctx.session.stateHash, hashes[cut] ?? '');
        return entry?.cut === cut ? entry : undefined;
      }),
    );
    const entries = found.filter((e): e is MemoEntry => e !== undefined).sort((a, b) => a.cut - b.cut);
    if (opts.counted) this.reporter.memoLookup(this.memo.kind, entries.length > 0);
    return entries;
  }

  /**
   * A stretch shorter than GUARDIAN_MIN_TRANSCRIPT_CHARS is not summarised (the seed's rule); rather than fail open,
   * the request goes on to the spill, which may still make it fit.
   */
  worthSummarising(ctx: RequestContext, from: number, cut: number): boolean {
    let chars = 0;
    for (const i of evictedIndexes(ctx.conv.messages, from, cut)) {
      const m = ctx.conv.messages[i]!;
      chars += m.text.length + m.toolCalls.reduce((n, c) => n + c.args.length, 0);
    }
    return chars >= this.config.summariser.minTranscriptChars;
  }

  /**
   * The sticky cut reused: no summariser call; a stretch still pending is archived now (ARCHITECTURE.md#fail-open
   * rule 3). The first reuse of a summary made ahead of need counts it as used (issue 14).
   */
  async reuse(ctx: RequestContext, given: MemoEntry): Promise<StretchResult> {
    this.reporter.summaryReused();
    const reused = (entry: MemoEntry): StretchResult => ({
      entry,
      calls: 0,
      chunked: false,
      deferred: false,
      run: null,
      span: null,
      waited: false,
    });
    if (!given.precomputed && pendingStart(given) === undefined) return reused(given);
    // One request folds a stretch into its span: a copy of the same turn, here or on another replica, waits for it
    // and takes the entry it stored (issue 30 item 7: each copy archived the stretch). The lock is not the stretch's
    // own, which a summariser holds until its summary is stored.
    const session = ctx.session.stateHash;
    const key = `archive:${given.prefixHash}`;
    const lock = await this.memo.lock(session, key, this.config.memo.lockWaitMs + 10_000);
    try {
      if (!lock) await this.memo.waitFor(session, key, this.config.memo.lockWaitMs);
      const stored = await this.memo.get(session, given.prefixHash);
      let entry = stored?.cut === given.cut ? stored : given;
      if (entry.precomputed) {
        entry = { ...entry };
        delete entry.precomputed;
        delete entry.asked;
        this.reporter.precompactUsed();
        await this.memo.put(session, entry);
      }
      // Still pending after the wait: the holder could not write it (or gave up), so this request tries
      // (ARCHITECTURE.md#fail-open rule 3 and rule 4).
      const pending = pendingStart(entry);
      if (pending === undefined) return reused(entry);
      const archived = await this.archiver.stretch(
        ctx,
        evictedIndexes(ctx.conv.messages, pending, entry.cut),
        {
          kind: pending > 0 ? 'continuation' : 'compaction',
          summary: entry.summary,
          continues: entry.spans.at(-1),
          from: pending,
        },
      );
      if (!archived.span) return { ...reused(entry), deferred: true };
      const updated = withSpans({ ...entry, span: archived.span }, entry, archived.refs);
      delete updated.pendingFrom;
      await this.memo.put(session, updated);
      return {
        ...reused(updated),
        run: archived.written?.run ?? null,
        span: archived.written?.span ?? null,
      };
    } finally {
      await lock?.release();
    }
  }

  /**
   * One summariser run per stretch: concurrent requests for the same stretch share it (in process and across replicas).
   * A summary made ahead of need is shared, or taken from the memo, only by a request that asks the summariser exactly
   * what it was asked (ADR 0009): then what goes out is the same whether the background call finished first, was
   * still under way, or never ran.
   */
  summarise(
    ctx: RequestContext,
    hashes: readonly string[],
    memo: MemoEntry | undefined,
    from: number,
    cut: number,
    opts: { precomputed?: boolean; instructions?: string; known?: readonly MemoEntry[] } = {},
  ): Promise<StretchResult> {
    const prefixHash = hashes[cut] ?? '';
    const precomputed = opts.precomputed === true;
    const ask = this.ask(
      ctx,
      evictedIndexes(ctx.conv.messages, from, cut),
      from > 0 ? memo?.summary : undefined,
    );
    if (opts.instructions) ask.instructions = opts.instructions;
    ask.key = askKey(ctx, ask);
    // Made ahead of need and found by this request's lookup: taken without a lock (another replica may be taking it
    // at the same moment; the archive lock in reuse() orders the two).
    const ready = opts.known?.find((e) => e.prefixHash === prefixHash && takes(e, cut, ask.key));
    if (ready?.precomputed) return this.forRequest(ctx, stored(ready, false), precomputed);
    const key = `${ctx.session.stateHash}:${prefixHash}:${ask.key}`;
    const existing = this.inflight.get(key);
    // A request that needs a stretch being summarised (in the background, or for another request) waits for it.
    if (existing)
      return existing.then((r) =>
        this.forRequest(ctx, { ...r, calls: 0, chunked: false, waited: true }, precomputed),
      );
    const p = this.summariseOnce(ctx, prefixHash, memo, from, cut, { precomputed, ask }).finally(() =>
      this.inflight.delete(key),
    );
    this.inflight.set(key, p);
    return p.then((r) => this.forRequest(ctx, r, precomputed));
  }

  /** What the summariser is asked for the evicted messages: their transcript lines, and the summary they extend. */
  private ask(ctx: RequestContext, evicted: readonly number[], prior: string | undefined): Ask {
    const { conv } = ctx;
    const maxChars = transcriptLineMaxChars({
      limitTokens: summaryPromptLimit(ctx.budget),
      summaryAllowanceTokens: maxSummaryTokens(ctx.budget),
      counter: ctx.count.counter,
    });
    const toolArgChars = this.config.summariser.toolArgChars;
    return {
      evicted,
      lines: evicted.map((i) => transcriptLine(conv.messages[i]!, i, { toolArgChars, maxChars })),
      prior,
    };
  }

  /**
   * A summary made ahead of need archived nothing (its messages were still in every request then). A client request
   * that meets one, still under way or stored by another replica, folds those messages away now, so it archives them
   * as a reuse does (issue 30 item 5): taken as it was, the block read the unarchived entry as a failed write.
   */
  private async forRequest(
    ctx: RequestContext,
    r: StretchResult,
    precomputed: boolean,
  ): Promise<StretchResult> {
    if (precomputed || !r.entry.precomputed) return r;
    const reused = await this.reuse(ctx, r.entry);
    return { ...reused, calls: r.calls, chunked: r.chunked, waited: r.waited };
  }

  private async summariseOnce(
    ctx: RequestContext,
    prefixHash: string,
    memo: MemoEntry | undefined,
    from: number,
    cut: number,
    { precomputed, ask }: { precomputed: boolean; ask: Ask },
  ): Promise<StretchResult> {
    const lock = await this.memo.lock(
      ctx.session.stateHash,
      prefixHash,
      this.config.memo.lockWaitMs + 10_000,
    );
    try {
      if (!lock) {
        // Another replica is summarising this stretch: wait for its summary, else do it ourselves
        // (ARCHITECTURE.md#fail-open rule 4).
        const theirs = await this.memo.waitFor(
          ctx.session.stateHash,
          prefixHash,
          this.config.memo.lockWaitMs,
        );
        if (takes(theirs, cut, ask.key)) return stored(theirs, true);
      } else {
        // Another replica may have stored this stretch and released its lock between our lookup and our lock.
        const theirs = await this.memo.get(ctx.session.stateHash, prefixHash);
        if (takes(theirs, cut, ask.key)) return stored(theirs, false);
      }
      const { conv } = ctx;
      const { result, failure } = await this.summary(ctx, ask);
      // A checkpoint goes out now only where the client's bytes cannot: the upstream refused them (overflow
      // recovery), or they exceed the window itself. Otherwise this turn fails open as before, and the memoized
      // checkpoint serves the next turns instead of asking the failing model again (issue 20, ADR 0007).
      const forwardNow =
        failure === undefined ||
        precomputed ||
        ctx.reason === 'overflow' ||
        ctx.count.tokens > ctx.window.window;
      // Messages an earlier turn could not archive are written with this stretch (ARCHITECTURE.md#fail-open rule 3,
      // issue 12 defect 1).
      const archiveFrom = Math.min(pendingStart(memo) ?? from, from);
      // A summary made ahead of need archives nothing yet: its messages are still in every forwarded request. The
      // first request that reuses it writes the span (reuse, like a deferred stretch), so nothing is archived twice
      // and nothing that was never folded away is archived at all.
      const archived =
        precomputed || !forwardNow
          ? { refs: [] as string[], span: undefined, written: undefined }
          : await this.archiver.stretch(ctx, evictedIndexes(conv.messages, archiveFrom, cut), {
              kind: archiveFrom > 0 && memo ? 'continuation' : 'compaction',
              summary: result.summary,
              continues: archiveFrom > 0 ? memo?.spans.at(-1) : undefined,
              from: archiveFrom,
            });
      const base: MemoEntry = {
        summary: result.summary,
        mustKeep: mergePins(memo?.mustKeep ?? [], mustKeepBullets(result.summary)).slice(-MAX_MEMO_BULLETS),
        cut,
        from,
        prefixHash,
        spans: [],
        summaryTokens: tokensForChars(result.summary.length, ctx.count.counter),
        createdAt: new Date().toISOString(),
      };
      const anchors = carriedAnchors({
        messages: conv.messages,
        cut,
        summary: result.summary,
        maxChars: this.config.compaction.anchorMaxChars,
      });
      if (anchors.length > 0) base.anchors = anchors;
      if (archived.span) base.span = archived.span;
      else base.pendingFrom = archiveFrom;
      if (precomputed) {
        base.precomputed = true;
        base.asked = ask.key;
      }
      if (failure) base.checkpoint = true;
      const entry = withSpans(base, memo, archived.refs);
      if (this.config.summariser.memo) await this.memo.put(ctx.session.stateHash, entry);
      // The summariser failed and its checkpoint may not go out now: the summarise stage fails open.
      if (!forwardNow) throw new StageFailure('summarise', failure);
      return {
        entry,
        calls: result.calls,
        chunked: result.chunked,
        deferred: !precomputed && forwardNow && archived.span === undefined,
        run: archived.written?.run ?? null,
        span: archived.written?.span ?? null,
        waited: true,
      };
    } finally {
      await lock?.release();
    }
  }

  /**
   * The model's summary of the evicted messages, or, when it cannot be had (an error, a timeout, a summary too short
   * twice, the breaker open), a checkpoint written without a model that extends the previous summary (ADR 0007). The
   * caller decides whether the checkpoint goes out now; `failure` says why there is no model summary.
   */
  private async summary(
    ctx: RequestContext,
    { evicted, lines, prior, instructions }: Ask,
  ): Promise<{ result: SummaryResult; failure?: SummariseError }> {
    const { conv } = ctx;
    try {
      const result = await this.summariser.summarise({
        adapter: ctx.adapter,
        model: conv.model,
        headers: ctx.auth,
        lines,
        prior,
        budget: ctx.budget,
        counter: ctx.count.counter,
        signal: ctx.input.signal,
        route: conv.route,
        ownerHash: ctx.session.ownerHash,
        ...(instructions ? { instructions } : {}),
      });
      if (result.chunked) {
        this.reporter.summaryChunked(ctx, result.calls);
      }
      return { result };
    } catch (err) {
      // A client that went away, or a transcript too short to be worth a summary: nothing to stand in for.
      if (!(err instanceof SummariseError)) throw err;
      if (err.code === 'TRANSCRIPT_TOO_SHORT' || ctx.input.signal.aborted)
        throw new StageFailure('summarise', err);
      this.reporter.summaryCheckpoint(ctx, err.code);
      const checkpoint = checkpointSummary(evicted.map((i) => conv.messages[i]!));
      const summary = prior === undefined ? checkpoint : `${prior}\n\n${checkpoint}`;
      return { result: { summary, calls: 0, chunked: false, retries: 0 }, failure: err };
    }
  }
}

/** What the summariser is asked for one stretch. */
interface Ask {
  evicted: readonly number[];
  lines: string[];
  prior: string | undefined;
  instructions?: string;
  /** askKey of the rest, once made. */
  key?: string;
}

/** A stored entry for this cut a request may take: one made ahead of need only if it was asked the same (`asked`). */
function takes(theirs: MemoEntry | undefined, cut: number, asked: string | undefined): theirs is MemoEntry {
  return theirs?.cut === cut && (!theirs.precomputed || theirs.asked === asked);
}

/** A stored entry, as a request that made no call for it has it. */
function stored(entry: MemoEntry, waited: boolean): StretchResult {
  return {
    entry,
    calls: 0,
    chunked: false,
    deferred: pendingStart(entry) !== undefined,
    run: null,
    span: null,
    waited,
  };
}

/**
 * The hash of what the summariser is asked for this stretch: the model and route, the most it may write, how the
 * transcript lines go into calls, the summary they extend, any instructions, and the lines themselves. Limits that do
 * not change what is asked (a count factor that moves no line into another call) do not change it.
 */
function askKey(ctx: RequestContext, ask: Ask): string {
  const { budget, count, conv } = ctx;
  const maxTokens = maxSummaryTokens(budget);
  const calls = groupForPrompts(ask.lines, {
    limitTokens: summaryPromptLimit(budget),
    summaryAllowanceTokens: maxTokens,
    counter: count.counter,
    hasPrior: ask.prior !== undefined,
  }).map((g) => g.length);
  return hashTexts(
    [conv.route, conv.model, maxTokens, calls.join(',')].join(' '),
    '\n\u0000prior\n',
    ask.prior ?? '',
    '\n\u0000instructions\n',
    ask.instructions ?? '',
    ...ask.lines.flatMap((l) => ['\n\u0000line\n', l]),
  );
}

/** The entry with `refs` added to its predecessor's spans, the newest MAX_MEMO_SPANS kept and the total counted. */
function withSpans(entry: MemoEntry, previous: MemoEntry | undefined, refs: readonly string[]): MemoEntry {
  const before = previous?.spans ?? [];
  const all = mergePins(before, refs);
  const total = Math.max(previous?.spanTotal ?? before.length, before.length) + (all.length - before.length);
  const out: MemoEntry = { ...entry, spans: all.slice(-MAX_MEMO_SPANS) };
  if (total > out.spans.length) out.spanTotal = total;
  else delete out.spanTotal;
  return out;
}
