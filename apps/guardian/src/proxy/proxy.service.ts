import type { IncomingMessage } from 'node:http';

import { Injectable } from '@nestjs/common';

import { withOpenSpan } from '@guardian/telemetry';

import {
  requestHeadersForUpstream,
  responseHeadersForClient,
  UpstreamClient,
  UpstreamError,
  type UpstreamResponse,
} from '@guardian/upstream';

import { AccessPolicy } from '../access/access-policy';
import { GuardianConfig } from '../config/guardian-config';
import { forwardedPath } from '../http/dot-segments';
import { GuardianError } from '../http/http-error';
import { ownedRoute, type OwnedRoute } from '../formats/owned-route';
import { CompactionService } from '../compaction/compaction.service';
import type { PrepareInput } from '../compaction/compaction-context';
import type { Exchange } from '../compaction/exchange';
import { OverflowRecovery } from '../compaction/overflow-recovery';
import { readSessionHeader, sessionRequiredMessage } from '../compaction/session';
import { Observability } from '../observability/observability';
import { withRequestTiming, type RequestTiming } from '../observability/request-timing';
import { ClientGone } from './client-gone';
import { sendError, type ProxiedRequest, type ProxyHandler } from './proxy-front';

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
    private readonly recovery: OverflowRecovery,
    private readonly obs: Observability,
    private readonly access: AccessPolicy,
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

  private async forward(
    p: ProxiedRequest,
    route: ReturnType<typeof ownedRoute>,
    onClose: () => void,
  ): Promise<void> {
    const { req, res, url } = p;
    const started = performance.now();

    // A client that goes away aborts the upstream request (and any summariser call it is waiting on).
    const gone = new ClientGone();
    // The answer ends one of three ways: whole ('end'), cut by the client ('close' first), or broken by the upstream
    // after its status line ('error'). Only the last is an upstream error (issue 12 defect 8: it was counted as
    // a success); the first of them decides, the others are ignored.
    const answer: { status?: number; exchange?: Exchange; settled?: boolean } = {};
    const settle = (upstreamError: boolean): void => {
      if (answer.status === undefined || answer.settled) return;
      answer.settled = true;
      if (answer.exchange) answer.exchange.finish({ status: answer.status, upstreamError });
      else
        this.obs.metrics.requests.inc({
          route: 'other',
          outcome: upstreamError ? 'upstream_error' : 'passthrough',
        });
    };
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
      settle(false);
      onClose();
    });

    // Team mode (ARCHITECTURE.md#access): the token names the owner of the request's session, or refuses it at the
    // door. Read from the separate header lines, like the session: two different tokens name no one. The lines are
    // read only when there is such a header: `headersDistinct` builds an object for every header.
    const verdict = this.access.proxy(
      this.access.identify(headerLines(req, 'x-guardian-token')),
      req.method ?? 'GET',
    );
    if (!verdict.ok) {
      this.obs.metrics.requests.inc({ route: route ?? 'other', outcome: 'refused' });
      sendError(req, res, verdict.refusal);
      return;
    }

    const sessionHeader = readSessionHeader(headerLines(req, 'x-guardian-session'));
    if (route && this.config.proxy.sessionHeaderRequired && sessionHeader.kind !== 'value') {
      this.obs.metrics.requests.inc({ route, outcome: 'refused' });
      sendError(
        req,
        res,
        new GuardianError('GUARDIAN_SESSION_REQUIRED', sessionRequiredMessage(sessionHeader), 400),
      );
      return;
    }

    const target = forwardedPath(url, this.config.upstream.basePath);
    if (!target.ok) {
      this.obs.metrics.requests.inc({ route: route ?? 'other', outcome: 'refused' });
      sendError(req, res, target.refusal);
      return;
    }
    const path = target.value;
    const headers = requestHeadersForUpstream(req.headers);
    let exchange: Exchange | undefined;
    let preparedMs = 0;
    if (route && p.body) {
      const input = new EdgeInput(
        {
          route,
          url,
          headers: req.headers,
          upstreamHeaders: headers,
          body: p.body,
          sessionHeader,
          owner: verdict.value,
          reqId: p.id,
        },
        gone,
      );
      // A request whose size alone proves it fits is decided without parsing or waiting (ADR 0013).
      exchange = this.compaction.fastPath(input);
      if (exchange) preparedMs = performance.now() - started;
      else {
        // Guardian's own calls to the upstream while preparing (window, /tokenize, summaries) are timed apart.
        const timing: RequestTiming = { upstreamWaitMs: 0 };
        exchange = await withRequestTiming(timing, () => this.compaction.prepare(input));
        preparedMs = performance.now() - started - timing.upstreamWaitMs;
      }
    }

    let upstream: UpstreamResponse;
    try {
      upstream = await this.upstream.request({
        method: req.method ?? 'GET',
        path,
        headers,
        body: exchange ? exchange.body : p.body,
        signal: gone,
      });
      if (exchange && upstream.status >= 400) {
        // An error answer may be an overflow: recovery needs the parsed request, which the fast path skipped.
        exchange = await this.compaction.complete(exchange);
        upstream = await this.recovery.recover(exchange, upstream, (body) =>
          this.upstream.request({ method: req.method ?? 'POST', path, headers, body, signal: gone }),
        );
      }
    } catch (err) {
      this.upstreamFailed(p, err, exchange, gone.aborted, path);
      return;
    }

    const ex = exchange;
    answer.status = upstream.status;
    answer.exchange = ex;
    const body = upstream.body;
    body.once('error', (err: Error) => {
      settle(true);
      this.obs.logger.warn({ reqId: p.id, err: err.message }, 'upstream body failed mid-stream');
      res.destroy(err);
    });
    if (res.destroyed) {
      // The client went away while the upstream answered: the abort has fired; nothing is left to send.
      settle(false);
      body.destroy();
      return;
    }
    const out = responseHeadersForClient(upstream.headers);
    if (ex) for (const name in ex.responseHeaders) out[name] = ex.responseHeaders[name]!;
    res.writeHead(upstream.status, out);
    body.pipe(res);
    // After the pipe's own listeners: the answer's last bytes reach the client before its bookkeeping runs.
    if (ex) ex.observe(upstream, { overheadMs: preparedMs });
    body.once('end', () => settle(false));
  }

  private upstreamFailed(
    p: ProxiedRequest,
    err: unknown,
    exchange: Exchange | undefined,
    aborted: boolean,
    path: string,
  ): void {
    const e =
      err instanceof UpstreamError
        ? err
        : new UpstreamError('UPSTREAM_UNREACHABLE', 'the upstream could not be reached', 502, { cause: err });
    if (exchange) exchange.finish({ status: e.status, upstreamError: true });
    else this.obs.metrics.requests.inc({ route: 'other', outcome: 'upstream_error' });
    if (aborted || e.code === 'UPSTREAM_ABORTED') {
      this.obs.logger.debug({ reqId: p.id }, 'client went away before the upstream answered');
      return;
    }
    this.obs.logger.warn({ reqId: p.id, code: e.code, path: path.split('?')[0] }, 'upstream request failed');
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

/** A request header's separate lines (RFC 9110 §5.3), or undefined when it was not sent. */
function headerLines(req: IncomingMessage, name: string): string[] | undefined {
  return req.headers[name] === undefined ? undefined : req.headersDistinct[name];
}
