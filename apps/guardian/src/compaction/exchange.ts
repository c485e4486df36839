import { createParser } from 'eventsource-parser';

import type { UpstreamResponse } from '@guardian/upstream';

import type { Observability } from '../observability/observability';
import type { AnswerBookkeeping } from './answer-bookkeeping';
import type { Decision, PrepareInput, RequestContext } from './compaction-context';
import type { FormatAdapter, ObservedAnswer } from '../formats/format-adapter';
import type { Precompactor } from './precompactor';

/** JSON answers larger than this are not kept for usage reading (they still stream through untouched). */
const MAX_OBSERVED_JSON = 4 * 1024 * 1024;

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

  constructor(
    private readonly deps: ExchangeDeps,
    readonly req: {
      input: PrepareInput;
      adapter: FormatAdapter;
      ctx?: RequestContext;
      decision?: Decision;
    },
  ) {
    this.decision = req.decision;
    this.body = req.decision?.body ?? req.input.body;
    const ignored = req.ctx?.session.ignored;
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
    if (!this.req.ctx || res.status >= 400) return;
    const type = String(res.headers['content-type'] ?? '');
    const adapter = this.req.adapter;
    if (type.includes('text/event-stream')) {
      const parser = createParser({
        onEvent: (ev) => {
          if (ev.data === '[DONE]') return;
          try {
            adapter.observe(JSON.parse(ev.data), this.observed);
          } catch {
            // A non-JSON event is the client's business; usage reading just skips it.
            return;
          }
        },
      });
      res.body.on('data', (chunk: Buffer) => parser.feed(chunk.toString('utf8')));
    } else if (type.includes('json')) {
      const chunks: Buffer[] = [];
      let size = 0;
      res.body.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_OBSERVED_JSON) chunks.push(chunk);
      });
      res.body.once('end', () => {
        if (size > MAX_OBSERVED_JSON) return;
        try {
          adapter.observe(JSON.parse(Buffer.concat(chunks).toString('utf8')), this.observed);
        } catch {
          // Not JSON after all: nothing to learn from it.
          return;
        }
      });
    }
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
    if (!ctx || !d) return;
    void this.deps.bookkeeping
      .record(ctx, d, this.observed)
      .catch((err: unknown) => obs.failOpen('memo', 'usage_write', { route, err }));
    if (!result.upstreamError && result.status < 400) this.deps.precompactor.consider(ctx, d);
  }
}
