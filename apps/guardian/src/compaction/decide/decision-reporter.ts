import { Injectable } from '@nestjs/common';

import { evictedIndexes } from '@guardian/compaction';

import type { Decision, RequestContext } from '../handoff';
import { DecideReporter } from './decide-reporter';
import { HandoffWriter } from './handoff-writer';
import { SpanRecorder } from './span-recorder';
import type { RecallFacts } from './stale-recall';
import type { StretchResult } from './stretch-service';

/** What one decided request did, for the metrics, the live events and the compaction log line. */
export interface DecisionFacts {
  stretch?: StretchResult;
  pins: number;
  spilled: number;
  /** Messages whose old tool results were replaced by pointers, before any summary (issue 32 item 3). */
  cleared?: number;
  /** The stale-recall block added after the newest message (issue 32 item 2). */
  recall?: RecallFacts;
}

/**
 * Reports a decision behind the request: its counters and event (through the stage's DecideReporter) and the
 * compaction log line (ARCHITECTURE.md#files, ARCHITECTURE.md#http-surface).
 */
@Injectable()
export class DecisionReporter {
  constructor(
    private readonly reporter: DecideReporter,
    private readonly recorder: SpanRecorder,
    private readonly handoffs: HandoffWriter,
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
        this.reporter.reportFailed(ctx, err);
      }
    });
  }

  private report(ctx: RequestContext, d: Decision, f: DecisionFacts): void {
    this.reporter.decided(ctx, d, f);
    this.log(ctx, d, f, false);
    const s = f.stretch;
    // The run of the session's newest span: the hand-off files go beside its spans (issue 32 item 5).
    if (s)
      this.handoffs.record(ctx, s.run ?? runOf(s.entry.span ?? s.entry.spans.at(-1)), d.compactedAt ?? '');
  }

  /** How long a compacted client request waited for its summary (the summary-wait histogram, issue 14). */
  waited(stretch: StretchResult, seconds: number): void {
    this.reporter.summaryWait(seconds, stretch.waited);
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

/** The run of a span ref `<run>/<NNNN>.json`. */
function runOf(ref: string | undefined): string | null {
  const run = ref?.split('/')[0];
  return run ? run : null;
}
