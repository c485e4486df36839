import { Injectable } from '@nestjs/common';

import type { UpstreamResponse } from '@guardian/upstream';

import type { ObservedAnswer } from '../../formats/format-adapter';
import { UsageLedger } from '../../observability/usage-ledger';
import type { NewestCut, PreparedRequest } from '../handoff';
import { AnswerBookkeeping } from './answer-bookkeeping';
import { AnswerReader } from './answer-reader';
import { AnswerReporter } from './answer-reporter';
import { Precompactor } from './precompactor';

interface ExchangeDeps {
  reporter: AnswerReporter;
  bookkeeping: AnswerBookkeeping;
  precompactor: Precompactor;
  ledger: UsageLedger;
}

/** When the request went upstream, and how long guardian itself took before that (its own upstream calls apart). */
export interface ExchangeTiming {
  sentAt: number;
  overheadMs: number;
}

/**
 * One owned request's answer, followed as it streams to the client: usage and tool calls read as they pass
 * (calibration, recall receipts), the session's usage record, and a background pre-compaction when the request came
 * near its budget. Made once the upstream has answered, for the request whose body that answer is to.
 */
export class Exchange {
  readonly responseHeaders: Record<string, string> = {};
  private readonly observed: ObservedAnswer = { toolNames: [] };
  private finished = false;

  constructor(
    private readonly deps: ExchangeDeps,
    private readonly request: PreparedRequest,
    private readonly timing: ExchangeTiming,
  ) {
    const ignored = request.ctx?.session.ignored ?? request.facts?.ignoredWarning;
    if (ignored) this.responseHeaders['x-guardian-warning'] = ignored.warning;
    const cut = request.decision?.newestCut;
    if (cut) this.responseHeaders['x-guardian-newest-cut'] = newestCutHeader(cut);
  }

  /** Follows the answer as it streams to the client: reads usage and tool calls without holding any byte back. */
  observe(res: UpstreamResponse): void {
    const { input, adapter, facts } = this.request;
    this.deps.reporter.firstByte(input.route, (performance.now() - this.timing.sentAt) / 1000);
    if (!facts || res.status >= 400) return;
    const reader = AnswerReader.for(adapter, this.observed, String(res.headers['content-type'] ?? ''));
    if (!reader) return;
    res.body.on('data', (chunk: Buffer) => reader.push(chunk));
    res.body.once('end', () => reader.end());
  }

  /** Called when the answer ended (or failed); only the first call counts. Never throws. */
  finish(result: { status: number; upstreamError?: boolean }): void {
    if (this.finished) return;
    this.finished = true;
    const { reporter, bookkeeping, precompactor, ledger } = this.deps;
    const { input, ctx, decision: d, facts } = this.request;
    const route = input.route;
    reporter.answered(route, result.upstreamError ? 'upstream_error' : (d?.outcome ?? 'passthrough'), {
      seconds: (performance.now() - this.timing.sentAt) / 1000,
      overheadSeconds: this.timing.overheadMs / 1000,
    });
    if (!facts || !d) return;
    // The usage log counts what was answered: an upstream error is not a request the backend served.
    if (!result.upstreamError && result.status < 400)
      ledger.later({
        kind: 'answer',
        owner_hash: facts.ownerHash ?? null,
        route: facts.route,
        model: facts.model,
        tokens_in: this.observed.promptTokens ?? null,
        tokens_out: this.observed.completionTokens ?? null,
      });
    const unread = this.request.fast ? { body: this.request.body, adapter: this.request.adapter } : undefined;
    reporter.behind(
      bookkeeping
        .record(facts, d, this.observed, unread)
        .catch((err: unknown) => reporter.behindFailed('memo', 'usage_write', route, err)),
    );
    if (ctx && !result.upstreamError && result.status < 400) precompactor.consider(ctx, d);
  }
}

/** Makes the Exchange of each answered owned request, with the providers that follow its answer. */
@Injectable()
export class ExchangeFactory {
  private readonly deps: ExchangeDeps;

  constructor(
    reporter: AnswerReporter,
    bookkeeping: AnswerBookkeeping,
    precompactor: Precompactor,
    ledger: UsageLedger,
  ) {
    this.deps = { reporter, bookkeeping, precompactor, ledger };
  }

  create(request: PreparedRequest, timing: ExchangeTiming): Exchange {
    return new Exchange(this.deps, request, timing);
  }
}

/**
 * `X-Guardian-Newest-Cut`: how much of the newest message the model did not see, and the span that holds it whole
 * (`context-guardian-recall --show <span>`). Names and counts only, like the events.
 */
function newestCutHeader(cut: NewestCut): string {
  const parts = [`omitted_tokens=${cut.omittedTokens}`, `original_tokens=${cut.originalTokens}`];
  if (cut.ref) parts.push(`span=${cut.ref}`);
  return parts.join('; ');
}
