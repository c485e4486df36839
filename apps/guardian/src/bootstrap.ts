import 'reflect-metadata';

import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';

import { MemoStore, RedisMemoStore } from '@guardian/memo';
import { UpstreamClient } from '@guardian/upstream';

import { AppModule } from './app.module';
import { GuardianConfig } from './config/guardian-config';
import { GuardianRuntime } from './config/guardian-runtime';
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
  const env = config.env;
  const adapter = new FastifyAdapter({
    bodyLimit: env.GUARDIAN_MAX_BODY_BYTES,
    // Clients and SDKs send a request id; reuse it in logs so a request can be followed across hops.
    requestIdHeader: 'x-request-id',
    // Hand the upstream's answer back as it arrives, however long the summariser or the model takes.
    connectionTimeout: 0,
    keepAliveTimeout: 75_000,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 1024 },
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot({ config, logger, runtime }),
    adapter,
    {
      bodyParser: false,
      logger: false,
    },
  );
  const fastify = app.getHttpAdapter().getInstance();
  keepRawBodies(fastify, env.GUARDIAN_MAX_BODY_BYTES);
  await app.listen(opts.port ?? env.GUARDIAN_PORT, env.GUARDIAN_HOST);
  const memo = app.get(MemoStore);
  // The store logs its own warning naming the target and the cause; requests are served from the local memo.
  if (memo instanceof RedisMemoStore) await memo.connect();
  const address = fastify.server.address();
  const port = typeof address === 'object' && address ? address.port : env.GUARDIAN_PORT;
  const shownHost = env.GUARDIAN_HOST.includes(':') ? `[${env.GUARDIAN_HOST}]` : env.GUARDIAN_HOST;
  return {
    app,
    url: `http://${shownHost}:${port}`,
    config,
    runtime,
    async close(graceMs = 25_000) {
      // Requests in flight (a long SSE answer) get `graceMs` to finish, then their connections are closed:
      // Kubernetes sends SIGKILL 30 s after SIGTERM by default.
      const timer = setTimeout(() => fastify.server.closeAllConnections(), graceMs);
      timer.unref();
      await app.close();
      clearTimeout(timer);
      await app.get(UpstreamClient).close();
      await memo.close();
    },
  };
}
