import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import type { GuardianMetrics } from '@guardian/telemetry';

import { ownedRoute } from '../formats/owned-route';
import type { HostGate } from '../guardian-api/access.guard';
import { isOwnEndpoint, PROXIED_METHODS } from '../proxy/proxy-front';
import { apiStyleOf } from './api-style';
import { GuardianError, sendHttpError } from './http-error';
import { keepRawBodies } from './raw-body';
import { SHUTTING_DOWN_RETRY_AFTER_SECONDS, shuttingDown, type ServingState } from './serving-state';

export interface EdgeHookDeps {
  gate: HostGate;
  metrics: GuardianMetrics;
  serving: ServingState;
  bodyLimit: number;
}

/**
 * What Fastify does for guardian's own endpoints before and after Nest: raw bodies, the DNS-rebinding gate, the
 * shutdown's `Connection: close`, the `guardian` route's count, and the 404 of guardian's namespace. The proxied
 * paths never reach Fastify (the ProxyFront does the same for them).
 */
export function installEdgeHooks(fastify: FastifyInstance, deps: EdgeHookDeps): void {
  const { gate, metrics, serving } = deps;
  keepRawBodies(fastify, deps.bodyLimit);
  // DNS rebinding (ARCHITECTURE.md#access): on a loopback bind every route checks Host and Origin before anything
  // else runs, the proxied ones included (in the front); a refused request is never read, parsed or forwarded.
  fastify.addHook('onRequest', (req, reply, done) => {
    if (serving.refusing) {
      // The listener is closed; this came on a connection kept alive from before (http/shutdown.ts): guardian's own
      // 503 with a hint to retry, where Fastify's return503OnClosing answered its own body without one.
      void reply.header('retry-after', String(SHUTTING_DOWN_RETRY_AFTER_SECONDS));
      void sendHttpError(reply, shuttingDown(), apiStyleOf(req.url, req.headers));
      return;
    }
    const refusal = gate.verdict(req.method, req.headers);
    if (!refusal) return done();
    if (!isOwnEndpoint(req.url))
      metrics.requests.inc({ route: ownedRoute(req.method, req.url) ?? 'other', outcome: 'refused' });
    void sendHttpError(reply, refusal, apiStyleOf(req.url, req.headers));
  });
  // Once shutting down, every answer not yet started tells the client to close its connection, so no kept-alive
  // socket holds the process until the grace ends and no client reuses one that is about to go.
  fastify.addHook('onSend', (_req, reply, payload, done) => {
    if (serving.draining) void reply.header('connection', 'close');
    done(null, payload);
  });
  // Guardian's own endpoints count as route "guardian" (the proxy path counts its own outcomes).
  fastify.addHook('onResponse', (req, reply, done) => {
    if (isOwnEndpoint(req.url)) {
      metrics.requests.inc({ route: 'guardian', outcome: reply.statusCode >= 400 ? 'refused' : 'served' });
    }
    done();
  });
  // `/guardian/*` is guardian's own namespace (ARCHITECTURE.md#http-surface): a path there it does not serve (or a
  // method it does not take) is its own 404, never the upstream's business. Its static routes win over this wildcard.
  const notFound = async (req: FastifyRequest, reply: FastifyReply) =>
    sendHttpError(
      reply,
      new GuardianError('GUARDIAN_NOT_FOUND', 'no such guardian endpoint', 404),
      apiStyleOf(req.url, req.headers),
    );
  const methods = [...PROXIED_METHODS];
  fastify.route({ method: methods, url: '/guardian', handler: notFound, exposeHeadRoute: false });
  fastify.route({ method: methods, url: '/guardian/*', handler: notFound, exposeHeadRoute: false });
}
