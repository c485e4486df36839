import { Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';

import { tracer } from '@guardian/telemetry';

import {
  requestHeadersForUpstream,
  responseHeadersForClient,
  UpstreamClient,
  UpstreamError,
  upstreamPathFor,
  type UpstreamResponse,
} from '@guardian/upstream';

import { AccessPolicy } from '../access/access-policy';
import { GuardianConfig } from '../config/guardian-config';
import { apiStyleOf } from '../http/api-style';
import { GuardianError, sendHttpError } from '../http/http-error';
import { ownedRoute } from '../formats/owned-route';
import { CompactionService } from '../compaction/compaction.service';
import { OverflowRecovery } from '../compaction/overflow-recovery';
import { readSessionHeader, sessionRequiredMessage } from '../compaction/session';
import { Observability } from '../observability/observability';
import { requestTiming, type RequestTiming } from '../observability/request-timing';

/**
 * The request path, top to bottom: read the body guardian was given (raw bytes), let compaction decide what to
 * forward (it never throws: any failure forwards the client's bytes, ARCHITECTURE.md#fail-open), forward it, and
 * stream the answer back as it arrives. An upstream that rejects a compacted-or-not request as too long gets one
 * retry.
 */
@Injectable()
export class ProxyService {
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
   */
  async handle(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const url = req.raw.url ?? req.url;
    const route = ownedRoute(req.method, url);
    await tracer().startActiveSpan(
      'guardian.request',
      { attributes: { 'http.request.method': req.method, 'guardian.route': route ?? 'other' } },
      async (span) => {
        reply.raw.once('close', () => {
          span.setAttribute('http.response.status_code', reply.raw.statusCode);
          span.end();
        });
        await this.forward(req, reply, url, route);
      },
    );
  }

  private async forward(
    req: FastifyRequest,
    reply: FastifyReply,
    url: string,
    route: ReturnType<typeof ownedRoute>,
  ): Promise<void> {
    const started = performance.now();
    const clientBody = Buffer.isBuffer(req.body) ? req.body : undefined;

    // A client that goes away aborts the upstream request (and any summariser call it is waiting on).
    const abort = new AbortController();
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) abort.abort();
    });

    // Team mode (ARCHITECTURE.md#access): the token names the owner of the request's session, or refuses it at the
    // door. Read from the separate header lines, like the session: two different tokens name no one.
    const verdict = this.access.proxy(
      this.access.identify(req.raw.headersDistinct['x-guardian-token']),
      req.method,
    );
    if (!verdict.ok) {
      this.obs.metrics.requests.inc({ route: route ?? 'other', outcome: 'refused' });
      void sendHttpError(reply, verdict.refusal, apiStyleOf(url, req.headers));
      return;
    }

    // Read from the separate header lines: `req.headers` would already have joined two of them with ", ".
    const sessionHeader = readSessionHeader(req.raw.headersDistinct['x-guardian-session']);
    if (route && this.config.proxy.sessionHeaderRequired && sessionHeader.kind !== 'value') {
      this.obs.metrics.requests.inc({ route, outcome: 'refused' });
      const refusal = new GuardianError(
        'GUARDIAN_SESSION_REQUIRED',
        sessionRequiredMessage(sessionHeader),
        400,
      );
      void sendHttpError(reply, refusal, apiStyleOf(url, req.headers));
      return;
    }

    const headers = requestHeadersForUpstream(req.headers);
    const path = upstreamPathFor(url, this.config.upstream.basePath);
    // Guardian's own calls to the upstream while preparing (window, /tokenize, summaries) are timed apart.
    const timing: RequestTiming = { upstreamWaitMs: 0 };
    const exchange =
      route && clientBody
        ? await requestTiming.run(timing, () =>
            this.compaction.prepare({
              route,
              url,
              headers: req.headers,
              body: clientBody,
              sessionHeader,
              owner: verdict.value,
              signal: abort.signal,
              reqId: req.id,
            }),
          )
        : undefined;
    const preparedMs = performance.now() - started - timing.upstreamWaitMs;

    let res: UpstreamResponse;
    try {
      res = await this.upstream.request({
        method: req.method,
        path,
        headers,
        body: exchange ? exchange.body : clientBody,
        signal: abort.signal,
      });
      if (exchange && res.status >= 400) {
        res = await this.recovery.recover(exchange, res, (body) =>
          this.upstream.request({ method: req.method, path, headers, body, signal: abort.signal }),
        );
      }
    } catch (err) {
      const e =
        err instanceof UpstreamError
          ? err
          : new UpstreamError('UPSTREAM_UNREACHABLE', 'the upstream could not be reached', 502, {
              cause: err,
            });
      if (exchange) exchange.finish({ status: e.status, upstreamError: true });
      else this.obs.metrics.requests.inc({ route: 'other', outcome: 'upstream_error' });
      if (abort.signal.aborted || e.code === 'UPSTREAM_ABORTED') {
        this.obs.logger.debug({ reqId: req.id }, 'client went away before the upstream answered');
        return;
      }
      this.obs.logger.warn(
        { reqId: req.id, code: e.code, path: path.split('?')[0] },
        'upstream request failed',
      );
      void sendHttpError(reply, e, apiStyleOf(url, req.headers));
      return;
    }

    // The answer ends one of three ways: whole ('end'), cut by the client ('close' first), or broken by the upstream
    // after its status line ('error'). Only the last is an upstream error (issue 12 defect 8: it was counted as
    // a success); the first of them decides, the others are ignored.
    const status = res.status;
    let settled = false;
    const settle = (upstreamError: boolean): void => {
      if (settled) return;
      settled = true;
      if (exchange) exchange.finish({ status, upstreamError });
      else
        this.obs.metrics.requests.inc({
          route: 'other',
          outcome: upstreamError ? 'upstream_error' : 'passthrough',
        });
    };
    if (exchange) exchange.observe(res, { overheadMs: preparedMs });
    res.body.once('end', () => settle(false));
    reply.raw.once('close', () => settle(false));
    reply.status(status).headers(responseHeadersForClient(res.headers));
    if (exchange) reply.headers(exchange.responseHeaders);
    // Registered before reply.send, so this runs before Fastify's own handler destroys the response.
    res.body.once('error', (err: Error) => {
      settle(true);
      this.obs.logger.warn({ reqId: req.id, err: err.message }, 'upstream body failed mid-stream');
      reply.raw.destroy(err);
    });
    // Fastify pipes the stream and ends the response; the handler does not wait for the body to finish.
    void reply.send(res.body);
  }
}
