import 'reflect-metadata';

import { mkdir } from 'node:fs/promises';

import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

import { MemoStore, RedisMemoStore } from '@guardian/memo';
import { GuardianMetrics } from '@guardian/telemetry';
import { UpstreamClient } from '@guardian/upstream';
import { SealedArchive } from '@guardian/archive';

import { AppModule } from './app.module';
import { SealMonitor } from './archive-verifier/seal-monitor';
import { GuardianConfig } from './config/guardian-config';
import { GuardianRuntime } from './config/guardian-runtime';
import { HostGate } from './guardian-api/access.guard';
import { installEdgeHooks } from './http/edge-hooks';
import { EdgeServer } from './http/edge-server';
import { ServingState } from './http/serving-state';
import { drain, stopServing, type ShutdownDeps } from './http/shutdown';
import type { GuardianLogger } from './observability/guardian-logger';
import { ProxyFront } from './proxy/proxy-front';
import { OpenStreams } from './proxy/stream-ending';

export interface RunningGuardian {
  app: NestFastifyApplication;
  /** `http://host:port` the sidecar listens on. */
  url: string;
  config: GuardianConfig;
  runtime: GuardianRuntime;
  /**
   * Stops accepting, lets requests in flight finish for up to `graceMs` (GUARDIAN_SHUTDOWN_GRACE_SECONDS unless
   * given), ends the streams still open with their route's error event, then closes everything.
   */
  close(graceMs?: number): Promise<void>;
  /**
   * What SIGTERM does (docs/RELIABILITY.md#shutdown): serves on for GUARDIAN_SHUTDOWN_DRAIN_SECONDS with /readyz at
   * 503, then `close()` with what is left of GUARDIAN_SHUTDOWN_GRACE_SECONDS.
   */
  shutdown(): Promise<void>;
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
  // The span log's key (a GUARDIAN_LOG_KEY_FILE that cannot be used stops the boot here), and the spans writers of
  // this host that died left without log entries, logged before the first request (issue 29).
  try {
    await app.get(SealedArchive).start();
  } catch (err) {
    // The boot stops with this error: the app made so far is closed first (its close failing adds nothing to say).
    await app.close().catch(() => undefined);
    throw err;
  }
  server.open(app.get(ProxyFront));
  await app.listen(opts.port ?? edge.port, edge.host);
  const memo = app.get(MemoStore);
  // The store logs its own warning naming the target and the cause; requests are served from the local memo.
  if (memo instanceof RedisMemoStore) await memo.connect();
  const address = fastify.server.address();
  const port = typeof address === 'object' && address ? address.port : edge.port;
  const shownHost = edge.host.includes(':') ? `[${edge.host}]` : edge.host;
  const stopping: ShutdownDeps = { server: fastify.server, serving, streams: app.get(OpenStreams), logger };
  const close = async (graceMs = config.shutdown.graceMs): Promise<void> => {
    // The seal check reads the whole archive at times; it is aborted first, so shutdown never waits for it
    // (issue 12 defect 3: SIGTERM took 59 s with 3,000 runs while /healthz kept answering).
    const sealStopped = app.get(SealMonitor).stop();
    await stopServing(stopping, graceMs);
    await sealStopped;
    // Nest's own hooks (work behind requests, pre-compaction jobs) run once nothing is in flight any more.
    await app.close();
    // The transparency log's last checkpoint is written behind the commits those hooks waited for: it lands before
    // the process exits (or a test removes the folder), and the log is marked released.
    await app.get(SealedArchive).stop();
    await app.get(UpstreamClient).close();
    await memo.close();
  };
  return {
    app,
    url: `http://${shownHost}:${port}`,
    config,
    runtime,
    close,
    async shutdown() {
      const { drainMs, graceMs } = config.shutdown;
      await drain(stopping, drainMs);
      await close(graceMs - drainMs);
    },
  };
}
