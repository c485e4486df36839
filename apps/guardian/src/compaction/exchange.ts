import { Readable } from 'node:stream';

import { createParser } from 'eventsource-parser';

import type { MemoStore } from '@guardian/memo';
import type { Observability } from '../observability/observability';
import { parseOverflow, readBounded, type UpstreamResponse } from '@guardian/upstream';

import type { Decision, PrepareInput, RequestContext } from './compaction-context';
import type { CaptureService } from './capture.service';
import type { CompactionService } from './compaction.service';
import type { FormatAdapter, ObservedAnswer } from './formats/format-adapter';
import type { RequestCounter } from './request-counter';
import type { SessionTable } from './session-table';
import type { SpanRecorder } from './span-recorder';

/** Tool names the recall MCP server offers; a model calling one is counted for the receipts. */
const RECALL_TOOLS = new Set([
  'search_spans',
  'read_span',
  'list_spans',
  'list_digests',
  'get_seal_status',
  'get_proxy_status',
  'get_context_status',
]);
/** JSON answers larger than this are not kept for usage reading (they still stream through untouched). */
const MAX_OBSERVED_JSON = 4 * 1024 * 1024;
/** An error answer is read (to recognise an overflow) up to this size. */
const MAX_ERROR_BODY = 1024 * 1024;

export interface ExchangeDeps {
  service: CompactionService;
  counter: RequestCounter;
  obs: Observability;
  memo: MemoStore;
  sessions: SessionTable;
  recorder: SpanRecorder;
  capture: CaptureService;
}

/**
 * One owned request after compaction decided: the body to forward, then everything that follows the answer —
 * one overflow retry (CONTRACTS §2.5), usage read as the answer streams past (calibration, recall tool calls),
 * and the session's usage record.
 */
export class Exchange {
  readonly body: Buffer;
  readonly responseHeaders: Record<string, string> = {};
  private decision: Decision | undefined;
  private readonly observed: ObservedAnswer = { toolNames: [] };
  private started = performance.now();
  private firstByteMs = 0;
  private finished = false;

  constructor(
    private readonly deps: ExchangeDeps,
    private readonly req: {
      input: PrepareInput;
      adapter: FormatAdapter;
      ctx?: RequestContext;
      decision?: Decision;
    },
  ) {
    this.decision = req.decision;
    this.body = req.decision?.body ?? req.input.body;
    if (req.ctx?.session.warning) this.responseHeaders['x-guardian-warning'] = req.ctx.session.warning;
  }

  get outcome(): Decision['outcome'] | 'unparsed' {
    return this.decision?.outcome ?? 'unparsed';
  }

  /** An error answer that is an overflow gets one compacted retry; anything else goes back to the client as it came. */
  async recover(
    res: UpstreamResponse,
    resend: (body: Buffer) => Promise<UpstreamResponse>,
  ): Promise<UpstreamResponse> {
    const ctx = this.req.ctx;
    if (!ctx || res.status < 400) return res;
    const text = await readBounded(res.body, MAX_ERROR_BODY);
    const replay = (): UpstreamResponse => ({ ...res, body: Readable.from([Buffer.from(text)]) });
    const overflow = parseOverflow(res.status, text);
    if (!overflow) return replay();
    const obs = this.deps.obs;
    const rejected = this.decision;
    const retry = await this.deps.service.retryAfterOverflow(ctx, overflow, {
      rawForwarded: rejected?.rawForwarded ?? ctx.count.rawEstimate,
      tokensForwarded: rejected?.tokensAfter ?? ctx.count.tokens,
    });
    if (!retry?.body) {
      obs.metrics.overflowRecoveries.inc({ route: ctx.conv.route, outcome: 'failed' });
      return replay();
    }
    const second = await resend(retry.body);
    const ok = second.status < 400;
    obs.metrics.overflowRecoveries.inc({ route: ctx.conv.route, outcome: ok ? 'ok' : 'failed' });
    if (ok) {
      // The retry's compaction was counted by the engine, with reason "overflow".
      obs.state.overflowRecovered += 1;
      obs.state.emit({
        kind: 'overflow_recovered',
        route: ctx.conv.route,
        model: ctx.conv.model,
        shape: overflow.shape,
        tokens_before: retry.tokensBefore,
        tokens_after: retry.tokensAfter,
      });
      this.decision = retry;
    }
    // A rejected retry: the client hears the upstream's own answer to it (CONTRACTS §2.5).
    return second;
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
    void this.record().catch((err: unknown) => obs.failOpen('memo', 'usage_write', { route, err }));
  }

  private async record(): Promise<void> {
    const ctx = this.req.ctx;
    const d = this.decision;
    if (!ctx || !d) return;
    const { counter, memo, sessions, obs, recorder } = this.deps;
    const model = ctx.conv.model;
    if (this.observed.promptTokens !== undefined && d.rawForwarded > 0)
      counter.observe(model, this.observed.promptTokens, d.rawForwarded);
    for (const name of this.observed.toolNames) {
      if (!RECALL_TOOLS.has(name)) continue;
      obs.metrics.recallToolCalls.inc({ tool: name });
      await recorder.recallToolCall();
    }
    this.deps.capture.record({
      sessionHash: ctx.session.hash,
      route: ctx.conv.route,
      messages: ctx.conv.items,
    });
    sessions.touch(ctx.session.hash, d.compactedAt);
    obs.metrics.activeSessions.set(sessions.size);
    const previous = await memo.getUsage(ctx.session.hash);
    // The upstream's own prompt count of what was forwarded is exact; without one, guardian's count stands.
    const reported = this.observed.promptTokens;
    const exact = reported !== undefined;
    const used = reported ?? d.tokensAfter;
    await memo.putUsage({
      session: ctx.session.hash,
      window: ctx.window.window,
      used_after_compaction: used,
      pct: Math.round((used / ctx.window.window) * 1000) / 10,
      count_source: exact ? 'tokenize' : ctx.count.source,
      model,
      last_compaction_at: d.compactedAt ?? previous?.last_compaction_at ?? null,
      at: new Date().toISOString(),
    });
  }
}
