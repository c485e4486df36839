import { Injectable } from '@nestjs/common';

import { withOpenSpan } from '@guardian/telemetry';

import {
  requestHeadersForUpstream,
  responseHeadersForClient,
  UpstreamClient,
  UpstreamError,
  type UpstreamResponse,
} from '@guardian/upstream';

import { GuardianConfig } from '../config/guardian-config';
import { ownedRoute, type OwnedRoute } from '../formats/owned-route';
import { CompactionService } from '../compaction/compaction.service';
import type { Exchange } from '../compaction/answer/exchange';
import type { PrepareInput } from '../compaction/handoff';
import { withRequestTiming, type RequestTiming } from '../observability/request-timing';
import { ClientGone } from './client-gone';
import { KeepAlive } from './keep-alive';
import { ProxyDoor } from './proxy-door';
import { sendError, type ProxiedRequest, type ProxyHandler } from './proxy-front';
import { ProxyReporter } from './proxy-reporter';

/**
 * The request path, top to bottom: read the body guardian was given (raw bytes), let compaction decide what to
 * forward (it never throws: any failure forwards the client's bytes, ARCHITECTURE.md#fail-open), forward it, and
 * stream the answer back as it arrives. An upstream that rejects a compacted-or-not request as too long gets one
 * retry.
 */
@Injectable()
export class ProxyService implements ProxyHandler {
  constructor(
    private readonly config: GuardianConfig,
    private readonly upstream: UpstreamClient,
    private readonly compaction: CompactionService,
    private readonly door: ProxyDoor,
    private readonly reporter: ProxyReporter,
  ) {}

  /**
   * One `guardian.request` span around the whole exchange (issue 6 item 4); the compaction, summariser and
   * archive spans nest inside it. It ends when the response is done, not when this returns: the body streams on.
   * Its attributes are set only when a tracer SDK records it (with none, the span is a no-op: ADR 0013).
   */
  async handle(p: ProxiedRequest): Promise<void> {
    const route = ownedRoute(p.req.method ?? 'GET', p.url);
    await withOpenSpan(
      'guardian.request',
      () => ({ 'http.request.method': p.req.method ?? 'GET', 'guardian.route': route ?? 'other' }),
      (span) =>
        this.forward(p, route, () => {
          if (span.isRecording()) span.setAttribute('http.response.status_code', p.res.statusCode);
          span.end();
        }),
    );
  }

  /** Admit, prepare, send (with one retry on overflow), relay: each step once, in this order. */
  private async forward(
    p: ProxiedRequest,
    route: OwnedRoute | undefined,
    onClose: () => void,
  ): Promise<void> {
    const { req, res, url } = p;
    const started = performance.now();
    // A client that goes away aborts the upstream request (and any summariser call it is waiting on).
    const gone = new ClientGone();
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
      onClose();
    });
    const admitted = this.door.admit(p, route);
    if (!admitted) return;
    const { path, sessionHeader, owner } = admitted;
    const headers = requestHeadersForUpstream(req.headers);
    const inputFor = (body: Buffer, as: OwnedRoute): EdgeInput =>
      new EdgeInput(
        {
          route: as,
          url,
          headers: req.headers,
          upstreamHeaders: headers,
          body,
          sessionHeader,
          owner,
          reqId: p.id,
        },
        gone,
      );
    const asIs = (): Promise<UpstreamResponse> =>
      this.upstream.request({ method: 'POST', path, headers, body: p.body, signal: gone });
    const passed = await this.door.protocols(p, route, inputFor, asIs);
    if (!passed) return;
    const clientBody = passed.body;
    const input = route && clientBody ? inputFor(clientBody, route) : undefined;
    // Guardian's own waits send a streamed client keep-alive frames (issue 28 item 2); what goes upstream is the same.
    const warning: Record<string, string> =
      sessionHeader.kind === 'ignored' ? { 'x-guardian-warning': sessionHeader.warning } : {};
    const alive =
      input &&
      new KeepAlive(p, {
        route: input.route,
        periodMs: this.config.proxy.keepAliveMs,
        ownHeaders: warning,
        abandon: () => gone.abort(),
      });
    // A request whose size alone proves it fits is decided without parsing or waiting (ADR 0013).
    let request = input && this.compaction.fastPath(input);
    const own: RequestTiming = { upstreamWaitMs: 0 };
    if (input && !request) {
      // Counted from here: a request the fast path decides has no wait of guardian's to cover.
      alive?.start();
      // The full path: guardian's own calls to the upstream (window, /tokenize, summaries) are timed apart.
      request = await withRequestTiming(own, () => this.compaction.prepare(input));
    }
    const sentAt = performance.now();
    const timing = { sentAt, overheadMs: request ? sentAt - started - own.upstreamWaitMs : 0 };
    const send = (body: Buffer | undefined): Promise<UpstreamResponse> => {
      alive?.handOver();
      return this.upstream.request({ method: req.method ?? 'GET', path, headers, body, signal: gone });
    };

    let upstream: UpstreamResponse;
    try {
      upstream = await send(request ? request.body : clientBody);
      // An error answer may be an overflow: recovery decides once more and retries (ARCHITECTURE.md#fail-open rule 5).
      if (request && upstream.status >= 400) {
        alive?.start();
        ({ request, res: upstream } = await this.compaction.recover(request, upstream, send));
      }
    } catch (err) {
      const exchange = request && this.compaction.follow(request, timing);
      this.upstreamFailed(p, err, exchange, gone.aborted, path, alive);
      return;
    }
    // A native protocol's report on what it did for the backend goes into the answer (docs/native-compaction.md).
    if (passed.answer) upstream = passed.answer(upstream);
    this.relay(p, upstream, request && this.compaction.follow(request, timing), alive);
  }

  /**
   * Streams the answer back as it arrives. It ends one of three ways: whole ('end'), cut by the client ('close'
   * first), or broken by the upstream after its status line ('error'). Only the last is an upstream error (issue 12
   * defect 8: it was counted as a success); the first of them settles the request, the others are ignored.
   */
  private relay(
    p: ProxiedRequest,
    upstream: UpstreamResponse,
    exchange: Exchange | undefined,
    alive?: KeepAlive,
  ): void {
    const { res } = p;
    let settled = false;
    const settle = (upstreamError: boolean): void => {
      if (settled) return;
      settled = true;
      if (exchange) exchange.finish({ status: upstream.status, upstreamError });
      else this.reporter.unowned(upstreamError ? 'upstream_error' : 'passthrough');
    };
    const body = upstream.body;
    body.once('error', (err: Error) => {
      settle(true);
      this.reporter.logger.warn({ reqId: p.id, err: err.message }, 'upstream body failed mid-stream');
      res.destroy(err);
    });
    if (res.destroyed || res.writableEnded) {
      // The client went away while the upstream answered (the abort has fired), or shutdown ended the stream guardian
      // was keeping alive: nothing is left to send.
      settle(false);
      body.destroy();
      return;
    }
    res.once('close', () => settle(false));
    if (alive?.committed) {
      // The status line is out: the answer goes on without its head, a failure as the route's error event.
      alive.relayCommitted(upstream, settle, exchange?.responseHeaders);
      if (exchange) exchange.observe(upstream);
      return;
    }
    const out = responseHeadersForClient(upstream.headers);
    if (exchange) for (const name in exchange.responseHeaders) out[name] = exchange.responseHeaders[name]!;
    res.writeHead(upstream.status, out);
    body.pipe(res);
    p.streams.follow(p, upstream);
    // After the pipe's own listeners: the answer's last bytes reach the client before its bookkeeping runs.
    if (exchange) exchange.observe(upstream);
    body.once('end', () => settle(false));
  }

  private upstreamFailed(
    p: ProxiedRequest,
    err: unknown,
    exchange: Exchange | undefined,
    aborted: boolean,
    path: string,
    alive?: KeepAlive,
  ): void {
    alive?.stop();
    const e =
      err instanceof UpstreamError
        ? err
        : new UpstreamError('UPSTREAM_UNREACHABLE', 'the upstream could not be reached', 502, { cause: err });
    if (exchange) exchange.finish({ status: e.status, upstreamError: true });
    else this.reporter.unowned('upstream_error');
    const { logger } = this.reporter;
    if (aborted || e.code === 'UPSTREAM_ABORTED') {
      logger.debug({ reqId: p.id }, 'client went away before the upstream answered');
      return;
    }
    logger.warn({ reqId: p.id, code: e.code, path: path.split('?')[0] }, 'upstream request failed');
    if (alive?.committed) alive.fail(e);
    if (p.res.headersSent || p.res.destroyed) return;
    sendError(p.req, p.res, e);
  }
}

/**
 * What compaction is given of one proxied request. A class for the sake of `signal`, made on first use (the fast path
 * never calls the upstream on its own): as a getter on the prototype it costs nothing, where an object literal with a
 * getter is a dictionary-mode object, about 0.4 us to make, and every later read of it a hash lookup.
 */
class EdgeInput implements PrepareInput {
  readonly route: OwnedRoute;
  readonly url: string;
  readonly headers: PrepareInput['headers'];
  readonly upstreamHeaders: PrepareInput['upstreamHeaders'];
  readonly body: Buffer;
  readonly sessionHeader: PrepareInput['sessionHeader'];
  readonly owner: PrepareInput['owner'];
  readonly reqId: string;

  constructor(
    fields: Omit<PrepareInput, 'signal'>,
    private readonly gone: ClientGone,
  ) {
    this.route = fields.route;
    this.url = fields.url;
    this.headers = fields.headers;
    this.upstreamHeaders = fields.upstreamHeaders;
    this.body = fields.body;
    this.sessionHeader = fields.sessionHeader;
    this.owner = fields.owner;
    this.reqId = fields.reqId;
  }

  get signal(): AbortSignal {
    return this.gone.signal;
  }
}
