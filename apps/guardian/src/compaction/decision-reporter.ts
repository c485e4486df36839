import { Injectable } from '@nestjs/common';

import { evictedIndexes } from '@guardian/compaction';

import { Observability } from '../observability/observability';
import type { Decision, RequestContext } from './compaction-context';
import { SpanRecorder } from './span-recorder';
import type { StretchResult } from './stretch-service';

/** What one decided request did, for the metrics, the live events and the compaction log line. */
export interface DecisionFacts {
  stretch?: StretchResult;
  pins: number;
  spilled: number;
}

/**
 * Reports a decision: /guardian/stats counters, Prometheus metrics, events, and the compaction log line
 * (ARCHITECTURE.md#files, ARCHITECTURE.md#http-surface).
 */
@Injectable()
export class DecisionReporter {
  constructor(
    private readonly obs: Observability,
    private readonly recorder: SpanRecorder,
  ) {}

  /**
   * A forwarded compaction or spill, reported once the request is on its way (the check phase after this turn of the
   * event loop, before any answer can arrive): the counters, events and log line were 75 us of a 128k-token memo-hit
   * turn that the client waited for (issue 16).
   */
  forwarded(ctx: RequestContext, d: Decision, f: DecisionFacts): void {
    setImmediate(() => {
      try {
        this.report(ctx, d, f);
      } catch (err) {
        // The request went out compacted already; only its report is lost, counted and logged once.
        this.obs.failOpen('internal', 'report_exception', {
          route: ctx.conv.route,
          model: ctx.conv.model,
          reqId: ctx.input.reqId,
          err,
        });
      }
    });
  }

  private report(ctx: RequestContext, d: Decision, f: DecisionFacts): void {
    const { state, metrics } = this.obs;
    const route = ctx.conv.route;
    const stretch = f.stretch;
    state.tokensKeptOut += Math.max(0, d.tokensBefore - d.tokensAfter);
    if (f.spilled > 0) {
      metrics.oversizedSpills.inc({ route });
      if (!stretch)
        state.emit({
          kind: 'oversized_spill',
          route,
          model: ctx.conv.model,
          session: ctx.session.hash.slice(0, 8),
          owner_hash: ctx.session.ownerHash ?? null,
          tokens_before: d.tokensBefore,
          tokens_after: d.tokensAfter,
        });
    }
    if (stretch) {
      metrics.compactions.inc({ route, reason: ctx.reason ?? 'budget' });
      metrics.tokensBefore.observe({ route }, d.tokensBefore);
      metrics.tokensAfter.observe({ route }, d.tokensAfter);
      metrics.pinsCarried.set(f.pins);
      if (f.pins > 0) metrics.compactionsWithPins.inc();
      state.emit({
        kind: 'compaction',
        route,
        model: ctx.conv.model,
        session: ctx.session.hash.slice(0, 8),
        owner_hash: ctx.session.ownerHash ?? null,
        tokens_before: d.tokensBefore,
        tokens_after: d.tokensAfter,
        summary_reused: stretch.calls === 0,
        summariser_calls: stretch.calls,
        pins: f.pins,
        oversized_spilled: f.spilled,
        archive_deferred: stretch.deferred,
      });
    }
    this.log(ctx, d, f, false);
  }

  /** How long a compacted client request waited for its summary (the summary-wait histogram, issue 14). */
  waited(stretch: StretchResult, seconds: number): void {
    this.obs.metrics.summaryWait.observe(seconds);
    if (!stretch.waited) return;
    this.obs.state.summaryWaits += 1;
    this.obs.state.summaryWaitSeconds += seconds;
  }

  /** A dry run: decided and logged, forwarded unchanged, nothing written (ARCHITECTURE.md#compaction). */
  dryRun(ctx: RequestContext, d: Decision, evictedCut: number, reused: boolean): void {
    const stretch = evictedCut > 0 ? { cut: evictedCut, reused } : undefined;
    this.log(ctx, d, { pins: 0, spilled: 0 }, true, stretch);
  }

  /** Queues the compaction log line (and its receipt) behind the request: two fsynced appends the client need not wait for. */
  private log(
    ctx: RequestContext,
    d: Decision,
    f: DecisionFacts,
    dryRun: boolean,
    dry?: { cut: number; reused: boolean },
  ): void {
    const s = f.stretch;
    const cut = s?.entry.cut ?? dry?.cut ?? 0;
    this.recorder.logLineLater(
      {
        run: s?.run ?? null,
        span: s?.span ?? null,
        session_hash: ctx.session.hash,
        owner_hash: ctx.session.ownerHash ?? null,
        route: ctx.conv.route,
        model: ctx.conv.model,
        window: ctx.window.window,
        tokens_before: d.tokensBefore,
        tokens_after: d.tokensAfter,
        count_source: ctx.count.source,
        evicted_messages: evictedIndexes(ctx.conv.messages, 0, cut).length,
        summary_reused: s ? s.calls === 0 : (dry?.reused ?? false),
        summariser_calls: s?.calls ?? 0,
        chunked: s?.chunked ?? false,
        oversized_spilled: f.spilled,
        pins: f.pins,
        archive_deferred: s?.deferred ?? false,
        dry_run: dryRun,
      },
      d.tokensBefore,
      d.tokensAfter,
    );
  }
}
