import { Injectable } from '@nestjs/common';

import { GuardianMetrics, logOnce, type Route, type SummaryRefusalReason } from '@guardian/telemetry';

import { FailOpen } from '../../observability/fail-open';
import { GuardianLogger } from '../../observability/guardian-logger';
import { GuardianState } from '../../state/guardian-state';
import type { Decision, RequestContext } from '../handoff';
import type { SummaryRefusal } from './summary-check';

/** A span write that failed, by the reason the deferred-archive counter is labelled with. */
export type ArchiveFailure = 'no_space' | 'read_only' | 'permission' | 'other';

/** What one decided request did, for the metrics and the live events. */
export interface DecidedFacts {
  /** The stretch the request carries a summary of, if any. */
  stretch?: { calls: number; deferred: boolean };
  pins: number;
  spilled: number;
  /** Messages whose old tool results were replaced by pointers (issue 32 item 3). */
  cleared?: number;
  /** What the stale-recall block carried (issue 32 item 2). */
  recall?: { excerpts: number; chars: number; names: number };
}

/**
 * What the decide stage reports (ARCHITECTURE.md#http-surface): memo lookups, summaries made, reused, chunked or
 * stood in for, the summariser's breaker, span writes, overflow retries and each forwarded decision. Counts that have
 * a Prometheus series go to the registry only; the rest to GuardianState through its methods.
 */
@Injectable()
export class DecideReporter {
  constructor(
    private readonly metrics: GuardianMetrics,
    private readonly state: GuardianState,
    private readonly failOpen: FailOpen,
    private readonly logger: GuardianLogger,
  ) {}

  memoLookup(store: string, hit: boolean): void {
    this.metrics.memoLookups.inc({ store, result: hit ? 'hit' : 'miss' });
  }

  /** A summary made ahead of need (ADR 0009) is what this request reuses. */
  precompactUsed(): void {
    this.metrics.precompact.inc({ outcome: 'used' });
  }

  summaryReused(): void {
    this.metrics.summariesReused.inc();
  }

  summaryChunked(ctx: RequestContext, calls: number): void {
    this.metrics.summariesChunked.inc();
    this.state.emit({
      kind: 'summary_chunked',
      route: ctx.conv.route,
      model: ctx.conv.model,
      session: ctx.session.hash.slice(0, 8),
      owner_hash: ctx.session.ownerHash ?? null,
      calls,
    });
  }

  /** The summariser failed and a checkpoint written without a model stands in (ADR 0007). */
  summaryCheckpoint(ctx: RequestContext, code: string): void {
    this.state.countSummaryCheckpoint();
    logOnce(
      this.logger,
      `summary_checkpoint:${code}`,
      { code, route: ctx.conv.route, reqId: ctx.input.reqId },
      'summariser failed; a checkpoint without a model summary stands in for the stretch (logged once per reason)',
    );
  }

  /** The summariser's answer was not a summary (summary-check.ts): counted by reason and evented (issue 32 item 7). */
  summaryRefused(call: { route: Route; model: string }, reason: SummaryRefusal): void {
    // Typed against the metric's closed list, whose series exist from boot: a new refusal must be added there too.
    const label: SummaryRefusalReason = reason;
    this.metrics.summariesRefused.inc({ reason: label });
    this.state.emit({ kind: 'summary_refused', route: call.route, model: call.model, reason });
  }

  /** Work that goes on behind the answer (GuardianState.behind). */
  behind(work: Promise<unknown>): void {
    this.state.trackBehind(work);
  }

  summaryRetry(): void {
    this.metrics.summaryRetries.inc();
  }

  summariserCall(outcome: 'ok' | 'short' | 'error', seconds: number): void {
    this.metrics.summariserDuration.observe({ outcome }, seconds);
  }

  circuitOpened(): void {
    this.metrics.summariserCircuitOpened.inc();
  }

  /** The newest circuits, for /guardian/stats, and how many are open now. */
  circuits(
    newest: Iterable<[string, { failures: number; opened: number; openUntil: number }]>,
    open: number,
  ): void {
    const shown = this.state.summariserCircuits;
    shown.clear();
    for (const [model, c] of newest) shown.set(model, { ...c });
    this.metrics.summariserCircuitsOpen.set(open);
  }

  /** How long a compacted client request waited for its summary (the summary-wait histogram, issue 14). */
  summaryWait(seconds: number, waitedOnSummariser: boolean): void {
    this.metrics.summaryWait.observe(seconds);
    if (waitedOnSummariser) this.state.countSummaryWait(seconds);
  }

  spanWritten(seconds: number): void {
    this.metrics.archiveWriteDuration.observe(seconds);
  }

  /** A span that could not be written: the request goes on compacted, the span later (ARCHITECTURE.md#fail-open rule 3). */
  spanDeferred(
    span: { route: string; model: string; ownerHash?: string },
    reason: ArchiveFailure,
    err: unknown,
  ): void {
    this.metrics.archiveWriteFailures.inc({ reason });
    this.metrics.archiveDeferred.inc();
    this.state.emit({
      kind: 'archive_deferred',
      route: span.route,
      model: span.model,
      reason,
      owner_hash: span.ownerHash ?? null,
    });
    this.failOpen.report('archive', reason, { route: routeLabel(span.route), model: span.model, err });
  }

  /** An archive write behind the request (a commit, a log line, a receipt) failed: the request is not affected. */
  archiveBehindFailed(
    reason: 'commit_failed' | 'log_write' | 'receipt_write' | 'handoff_write',
    where: { route: string; model?: string },
    err: unknown,
  ): void {
    this.failOpen.report('archive', reason, { route: routeLabel(where.route), model: where.model, err });
  }

  /** Overflow recovery's outcome (ARCHITECTURE.md#fail-open rule 5); a retry that was answered raises an event. */
  overflowRecovery(ctx: RequestContext, recovered?: { shape: string; retry: Decision }): void {
    this.metrics.overflowRecoveries.inc({ route: ctx.conv.route, outcome: recovered ? 'ok' : 'failed' });
    if (!recovered) return;
    this.state.emit({
      kind: 'overflow_recovered',
      route: ctx.conv.route,
      model: ctx.conv.model,
      session: ctx.session.hash.slice(0, 8),
      owner_hash: ctx.session.ownerHash ?? null,
      shape: recovered.shape,
      tokens_before: recovered.retry.tokensBefore,
      tokens_after: recovered.retry.tokensAfter,
    });
  }

  recoveryFailed(ctx: RequestContext, reason: string, err: unknown): void {
    this.failOpen.report('recovery', reason, {
      route: ctx.conv.route,
      model: ctx.conv.model,
      reqId: ctx.input.reqId,
      err,
    });
  }

  /** Reporting a forwarded decision threw: the request went out compacted already, only its report is lost. */
  reportFailed(ctx: RequestContext, err: unknown): void {
    this.failOpen.report('internal', 'report_exception', {
      route: ctx.conv.route,
      model: ctx.conv.model,
      reqId: ctx.input.reqId,
      err,
    });
  }

  /** A forwarded compaction or spill: its counters and its live event. */
  decided(ctx: RequestContext, d: Decision, f: DecidedFacts): void {
    const { metrics, state } = this;
    const route = ctx.conv.route;
    const stretch = f.stretch;
    state.addTokensKeptOut(d.tokensBefore - d.tokensAfter);
    // What both events say of the request.
    const said = {
      route,
      model: ctx.conv.model,
      session: ctx.session.hash.slice(0, 8),
      owner_hash: ctx.session.ownerHash ?? null,
      tokens_before: d.tokensBefore,
      tokens_after: d.tokensAfter,
    };
    if (f.spilled > 0) {
      metrics.oversizedSpills.inc({ route });
      if (!stretch) state.emit({ kind: 'oversized_spill', ...said });
    }
    const cut = d.newestCut;
    if (cut)
      state.emit({
        kind: 'newest_cut',
        ...said,
        original_tokens: cut.originalTokens,
        omitted_tokens: cut.omittedTokens,
        span: cut.ref ?? null,
      });
    if (f.cleared) {
      metrics.toolResultsCleared.inc({ route }, f.cleared);
      state.emit({ kind: 'tool_results_cleared', ...said, cleared: f.cleared });
    }
    const recall = f.recall;
    if (recall) {
      metrics.staleRecalls.inc({ route });
      metrics.staleRecallExcerpts.inc({ route }, recall.excerpts);
      // Counts only: the names and excerpts are message text, which events never carry.
      state.emit({
        kind: 'stale_recall',
        ...said,
        excerpts: recall.excerpts,
        chars: recall.chars,
        names: recall.names,
      });
    }
    if (!stretch) return;
    metrics.compactions.inc({ route, reason: ctx.reason ?? 'budget' });
    metrics.tokensBefore.observe({ route }, d.tokensBefore);
    metrics.tokensAfter.observe({ route }, d.tokensAfter);
    metrics.pinsCarried.set(f.pins);
    if (f.pins > 0) metrics.compactionsWithPins.inc();
    state.emit({
      kind: 'compaction',
      ...said,
      // Which header named the session, or `derived` (issue 28 item 1): a client id in use is visible here.
      session_source: ctx.session.source ?? null,
      // A sub-agent's own compaction, under its session: the first 8 hex digits of its state key, never the raw id.
      agent: ctx.session.agent === undefined ? null : ctx.session.stateHash.slice(0, 8),
      summary_reused: stretch.calls === 0,
      summariser_calls: stretch.calls,
      pins: f.pins,
      oversized_spilled: f.spilled,
      archive_deferred: stretch.deferred,
    });
  }
}

function routeLabel(route: string): Route {
  return route === 'chat' || route === 'messages' || route === 'responses' ? route : 'other';
}
