import { Injectable } from '@nestjs/common';

import type { UpstreamResponse } from '@guardian/upstream';

import { Observability } from '../observability/observability';
import { AnswerBookkeeping, type AnswerFacts } from './answer-bookkeeping';
import { AnswerReader } from './answer-reader';
import type { Decision, PrepareInput, RequestContext } from './compaction-context';
import type { FormatAdapter, ObservedAnswer } from '../formats/format-adapter';
import { Precompactor } from './precompactor';

export interface ExchangeDeps {
  obs: Observability;
  bookkeeping: AnswerBookkeeping;
  precompactor: Precompactor;
}

/**
 * One owned request after compaction decided: the body to forward, then what follows the answer — usage and tool
 * calls read as the answer streams past (calibration, recall receipts), the session's usage record, and a background
 * pre-compaction when the request came near its budget. Overflow recovery (OverflowRecovery) may replace the
 * decision with its retry's.
 */
export class Exchange {
  readonly body: Buffer;
  readonly responseHeaders: Record<string, string> = {};
  private decision: Decision | undefined;
  private readonly observed: ObservedAnswer = { toolNames: [] };
  private readonly started = performance.now();
  private firstByteMs = 0;
  private finished = false;
  readonly fast: boolean;
  private readonly facts: AnswerFacts | undefined;

  constructor(
    private readonly deps: ExchangeDeps,
    readonly req: {
      input: PrepareInput;
      adapter: FormatAdapter;
      ctx?: RequestContext;
      decision?: Decision;
      /** What the answer's bookkeeping needs; the full path derives it from `ctx`, the fast path from the bytes. */
      facts?: AnswerFacts;
      /** Decided by the fast path (ADR 0013): no `ctx`; recovery prepares it in full first. */
      fast?: boolean;
    },
  ) {
    this.decision = req.decision;
    this.body = req.decision?.body ?? req.input.body;
    this.facts = req.facts;
    this.fast = req.fast === true;
    const ignored = req.ctx?.session.ignored ?? req.facts?.ignoredWarning;
    if (ignored) this.responseHeaders['x-guardian-warning'] = ignored.warning;
  }

  get outcome(): Decision['outcome'] | 'unparsed' {
    return this.decision?.outcome ?? 'unparsed';
  }

  /** The decision whose body went upstream last (the retry's, after a recovered overflow). */
  get current(): Decision | undefined {
    return this.decision;
  }

  /** A recovered overflow: the retry's decision is what the answer belongs to. */
  adopt(retry: Decision): void {
    this.decision = retry;
  }

  /** Follows the answer as it streams to the client: reads usage and tool calls without holding any byte back. */
  observe(res: UpstreamResponse, timing: { overheadMs: number }): void {
    this.firstByteMs = timing.overheadMs;
    const route = this.req.input.route;
    this.deps.obs.metrics.upstreamTtfb.observe({ route }, (performance.now() - this.started) / 1000);
    if (!this.facts || res.status >= 400) return;
    const reader = AnswerReader.for(
      this.req.adapter,
      this.observed,
      String(res.headers['content-type'] ?? ''),
    );
    if (!reader) return;
    res.body.on('data', (chunk: Buffer) => reader.push(chunk));
    res.body.once('end', () => reader.end());
  }

  /** Called once when the answer ended (or failed): metrics, calibration, usage record. Never throws. */
  finish(result: { status: number; upstreamError?: boolean }): void {
    if (this.finished) return;
    this.finished = true;
    const { obs } = this.deps;
    const route = this.req.input.route;
    const outcome = result.upstreamError ? 'upstream_error' : (this.decision?.outcome ?? 'passthrough');
    obs.metrics.requests.inc({ route, outcome });
    obs.metrics.upstreamDuration.observe({ route }, (performance.now() - this.started) / 1000);
    obs.metrics.overhead.observe({ route }, this.firstByteMs / 1000);
    obs.state.upstreamStatus = result.upstreamError ? 'down' : 'ok';
    const { ctx } = this.req;
    const d = this.decision;
    if (!this.facts || !d) return;
    void this.deps.bookkeeping
      .record(this.facts, d, this.observed)
      .catch((err: unknown) => obs.failOpen('memo', 'usage_write', { route, err }));
    if (ctx && !result.upstreamError && result.status < 400) this.deps.precompactor.consider(ctx, d);
  }
}

/** Makes the Exchange of each owned request, with the providers that follow its answer. */
@Injectable()
export class ExchangeFactory {
  private readonly deps: ExchangeDeps;

  constructor(obs: Observability, bookkeeping: AnswerBookkeeping, precompactor: Precompactor) {
    this.deps = { obs, bookkeeping, precompactor };
  }

  create(req: Exchange['req']): Exchange {
    return new Exchange(this.deps, req);
  }
}
