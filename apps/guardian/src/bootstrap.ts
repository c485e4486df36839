import 'reflect-metadata';

import { mkdir } from 'node:fs/promises';

import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

import { MemoStore, RedisMemoStore } from '@guardian/memo';
import { GuardianMetrics } from '@guardian/telemetry';
import { UpstreamClient } from '@guardian/upstream';

import { AppModule } from './app.module';
import { SealMonitor } from './archive-verifier/seal-monitor';
import { GuardianConfig } from './config/guardian-config';
import { GuardianRuntime } from './config/guardian-runtime';
import { HostGate } from './guardian-api/access.guard';
import { installEdgeHooks } from './http/edge-hooks';
import { EdgeServer } from './http/edge-server';
import { ServingState } from './http/serving-state';
import type { GuardianLogger } from './observability/guardian-logger';
import { ProxyFront } from './proxy/proxy-front';

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
 * What the sidecar is made of is wired in app.module.ts; this creates the app over the edge server, listens, and
 * hands back the handle.
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
  const server = new EdgeServer(edge.maxBodyBytes);
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot({ config, logger, runtime }),
    server.adapter,
    {
      bodyParser: false,
      logger: false,
      // A provider that cannot start (a tokens file that cannot be used) must reach the caller, which says why: by
      // default Nest exits 1 on its own, and with its logger off it would say nothing at all.
      abortOnError: false,
    },
  );
  const fastify = app.getHttpAdapter().getInstance();
  const serving = app.get(ServingState);
  installEdgeHooks(fastify, {
    gate: app.get(HostGate),
    metrics: app.get(GuardianMetrics),
    serving,
    bodyLimit: edge.maxBodyBytes,
  });
  server.open(app.get(ProxyFront));
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
      serving.draining = true;
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
