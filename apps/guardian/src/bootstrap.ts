import 'reflect-metadata';

import { mkdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest, FastifyServerFactoryHandler } from 'fastify';

import { MemoStore, RedisMemoStore } from '@guardian/memo';
import { GuardianMetrics } from '@guardian/telemetry';
import { UpstreamClient } from '@guardian/upstream';

import { AppModule } from './app.module';
import { withoutDotSegments } from './http/dot-segments';
import { isOwnEndpoint, PROXIED_METHODS, ProxyFront } from './proxy/proxy-front';
import { ProxyService } from './proxy/proxy.service';
import { SealMonitor } from './archive-verifier/seal-monitor';
import { GuardianConfig } from './config/guardian-config';
import { GuardianRuntime } from './config/guardian-runtime';
import { HostGate } from './guardian-api/access.guard';
import { apiStyleOf } from './http/api-style';
import { GuardianError, sendHttpError } from './http/http-error';
import { ownedRoute } from './formats/owned-route';
import { keepRawBodies } from './http/raw-body';
import type { GuardianLogger } from './observability/guardian-logger';

export interface RunningGuardian {
  app: NestFastifyApplication;
  /** `http://host:port` the sidecar listens on. */
  url: string;
  config: GuardianConfig;
  runtime: GuardianRuntime;
  /** Stops accepting, lets requests in flight finish for up to `graceMs`, then closes everything. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Builds and starts the sidecar. main.ts calls it with the environment; tests call it in-process with a port of 0.
 */
export async function startGuardian(
  config: GuardianConfig,
  logger: GuardianLogger,
  opts: { port?: number } = {},
): Promise<RunningGuardian> {
  const runtime = new GuardianRuntime();
  const edge = config.proxy;
  // The span folder is made once at boot, so that /readyz's "missing" means it vanished later (the probe only
  // looks). A volume that cannot take it now is not fatal: spans are deferred until it can (ARCHITECTURE.md#fail-open
  // rule 3).
  await mkdir(config.paths.spanDir, { recursive: true, mode: 0o700 }).catch((err: unknown) =>
    logger.warn(
      { err: err instanceof Error ? err.message : String(err) },
      'span folder could not be created at boot; spans are deferred until the volume takes them',
    ),
  );
  // The proxied paths are served by a node:http front that runs before Fastify (ADR 0013); it exists once the
  // app's providers do, and until then (never while listening) every request is Fastify's.
  const doors: { front?: ProxyFront } = {};
  const adapter = new FastifyAdapter({
    bodyLimit: edge.maxBodyBytes,
    // Clients and SDKs send a request id; reuse it in logs so a request can be followed across hops.
    requestIdHeader: 'x-request-id',
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 1024 },
    serverFactory: (handler: FastifyServerFactoryHandler) => {
      const server = createServer((req: IncomingMessage, res: ServerResponse) => {
        // Routing, access and the upstream all see the path the dot segments resolve to (`/v1/../x` is `/x`); a path
        // written under /guardian stays guardian's whatever it resolves to, so it is never forwarded.
        const url = req.url;
        if (url !== undefined && !isOwnEndpoint(url)) req.url = withoutDotSegments(url);
        if (doors.front?.owns(req)) doors.front.serve(req, res);
        else handler(req, res);
      });
      // Hand the upstream's answer back as it arrives, however long the summariser or the model takes: no socket
      // or request timeout (what Fastify's connectionTimeout 0 and requestTimeout 0 set on its own server).
      server.setTimeout(0);
      server.requestTimeout = 0;
      server.keepAliveTimeout = 75_000;
      return server;
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot({ config, logger, runtime }),
    adapter,
    {
      bodyParser: false,
      logger: false,
      // A provider that cannot start (a tokens file that cannot be used) must reach the caller, which says why: by
      // default Nest exits 1 on its own, and with its logger off it would say nothing at all.
      abortOnError: false,
    },
  );
  const fastify = app.getHttpAdapter().getInstance();
  keepRawBodies(fastify, edge.maxBodyBytes);
  // Guardian's own endpoints count as route "guardian" (the proxy path counts its own outcomes).
  const metrics = app.get(GuardianMetrics);
  // DNS rebinding (ARCHITECTURE.md#access): on a loopback bind every route checks Host and Origin before anything
  // else runs, the proxied ones included (in the front); a refused request is never read, parsed or forwarded.
  const gate = new HostGate(config);
  // Everything guardian does not own goes upstream: every method, every path, through the node:http front.
  doors.front = new ProxyFront({
    proxy: app.get(ProxyService),
    gate,
    metrics,
    logger,
    bodyLimit: edge.maxBodyBytes,
  });
  fastify.addHook('onRequest', (req, reply, done) => {
    const refusal = gate.verdict(req.method, req.headers);
    if (!refusal) return done();
    if (!isOwnEndpoint(req.url))
      metrics.requests.inc({ route: ownedRoute(req.method, req.url) ?? 'other', outcome: 'refused' });
    void sendHttpError(reply, refusal, apiStyleOf(req.url, req.headers));
  });
  // Once shutting down, every answer not yet started tells the client to close its connection, so no kept-alive
  // socket holds the process until the grace ends and no client reuses one that is about to go.
  let closing = false;
  fastify.addHook('onSend', (_req, reply, payload, done) => {
    if (closing) void reply.header('connection', 'close');
    done(null, payload);
  });
  // Fastify answers 503 to requests that arrive once it is closing; the front does the same for the proxied ones.
  fastify.addHook('preClose', (done) => {
    doors.front?.refuseNew();
    done();
  });
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
  await app.listen(opts.port ?? edge.port, edge.host);
  const memo = app.get(MemoStore);
  // The store logs its own warning naming the target and the cause; requests are served from the local memo.
  if (memo instanceof RedisMemoStore) await memo.connect();
  const address = fastify.server.address();
  const port = typeof address === 'object' && address ? address.port : edge.port;
  const shownHost = edge.host.includes(':') ? `[${edge.host}]` : edge.host;
  return {
    app,
    url: `http://${shownHost}:${port}`,
    config,
    runtime,
    async close(graceMs = 25_000) {
      // Requests in flight (a long SSE answer) get `graceMs` to finish, then their connections are closed:
      // Kubernetes sends SIGKILL 30 s after SIGTERM by default.
      closing = true;
      doors.front?.drain();
      const timer = setTimeout(() => fastify.server.closeAllConnections(), graceMs);
      timer.unref();
      // Node closes the connections that are idle when close() is called, but one whose answer had already started
      // becomes idle later and would hold the process until the grace ran out (25 s after any SIGTERM under
      // traffic). Idle ones are closed as they appear.
      const idle = setInterval(() => fastify.server.closeIdleConnections(), 50);
      idle.unref();
      // The seal check reads the whole archive at times; it is aborted first, so shutdown never waits for it
      // (issue 12 defect 3: SIGTERM took 59 s with 3,000 runs while /healthz kept answering).
      await app.get(SealMonitor).stop();
      await app.close();
      clearTimeout(timer);
      clearInterval(idle);
      await app.get(UpstreamClient).close();
      await memo.close();
    },
  };
}
