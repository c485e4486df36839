import { DynamicModule, Module, type Provider } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';

import { ArchiveWriter, CompactionLog, Receipts, SealedArchive, writerLog } from '@guardian/archive';
import { InMemoryMemoStore, MemoStore, RedisMemoStore } from '@guardian/memo';
import { GuardianMetrics, MEMO_OPS } from '@guardian/telemetry';
import { UpstreamClient } from '@guardian/upstream';

import { AccessPolicy } from './access/access-policy';
import { ArchiveController } from './archive-api/archive.controller';
import { ArchiveReaders } from './archive-api/archive-readers';
import { CaptureController } from './archive-api/capture.controller';
import { CaptureIntake } from './archive-api/capture-intake';
import { TokenRegistry } from './access/token-registry';
import { AnswerBookkeeping } from './compaction/answer-bookkeeping';
import { CaptureService } from './compaction/capture.service';
import { CompactionEngine } from './compaction/compaction-engine';
import { CompactionService } from './compaction/compaction.service';
import { DecisionReporter } from './compaction/decision-reporter';
import { ExchangeFactory } from './compaction/exchange';
import { FastPath } from './compaction/fast-path';
import { OverflowRecovery } from './compaction/overflow-recovery';
import { Precompactor } from './compaction/precompactor';
import { RequestCounter } from './compaction/request-counter';
import { RequestMeasure } from './compaction/request-measure';
import { SessionTable } from './compaction/session-table';
import { SpanRecorder } from './compaction/span-recorder';
import { StretchArchiver } from './compaction/stretch-archiver';
import { StretchService } from './compaction/stretch-service';
import { Summariser } from './compaction/summariser';
import { SummaryBreaker } from './compaction/summary-breaker';
import { WindowService } from './compaction/window.service';
import { GuardianConfig } from './config/guardian-config';
import { GuardianRuntime } from './config/guardian-runtime';
import { AccessGuard, ArchiveGuard } from './guardian-api/access.guard';
import { GuardianController } from './guardian-api/guardian.controller';
import { HealthController } from './health/health.controller';
import { SpanVolumeProbe } from './health/span-volume-probe';
import { GuardianErrorFilter } from './http/error.filter';
import { GuardianLogger } from './observability/guardian-logger';
import { Observability } from './observability/observability';
import { recordUpstreamWait } from './observability/request-timing';
import { ProxyService } from './proxy/proxy.service';
import { GuardianState } from './state/guardian-state';

/**
 * How long a compaction log line or receipt waits for others before they are written together with one fsync: they
 * are written behind the request (a lost line costs a `--savings` figure, not a request), and one client's turns
 * come one at a time, so without a wait each had an open, a write, an fsync and a close of its own (ADR 0017).
 */
const BEHIND_MS = 25;
/** What boot hands the module: the validated config, the logger and this process's runtime facts. */
export interface GuardianModuleOptions {
  config: GuardianConfig;
  logger: GuardianLogger;
  runtime: GuardianRuntime;
}

function infrastructure({ config, logger, runtime }: GuardianModuleOptions): Provider[] {
  const { access, archive, compaction, memo, proxy } = config;
  return [
    { provide: GuardianConfig, useValue: config },
    { provide: GuardianLogger, useValue: logger },
    { provide: GuardianRuntime, useValue: runtime },
    {
      provide: GuardianMetrics,
      useFactory: () => new GuardianMetrics({ defaultMetrics: true, version: config.version }),
    },
    {
      provide: UpstreamClient,
      useFactory: () =>
        new UpstreamClient({
          origin: config.upstream.origin,
          timeoutSeconds: proxy.upstreamTimeoutSeconds,
          connectTimeoutSeconds: proxy.connectTimeoutSeconds,
          onWait: recordUpstreamWait,
        }),
    },
    {
      provide: MemoStore,
      inject: [GuardianMetrics],
      useFactory: (metrics: GuardianMetrics): MemoStore => {
        const local = new InMemoryMemoStore({ maxSessions: compaction.maxSessions });
        if (!memo.redisUrl) return local;
        return new RedisMemoStore({
          url: memo.redisUrl,
          prefix: memo.redisPrefix,
          ttlSeconds: memo.ttlSeconds,
          commandTimeoutMs: memo.redisTimeoutMs,
          fallback: local,
          onError: (op) =>
            metrics.memoErrors.inc({ op: (MEMO_OPS as readonly string[]).includes(op) ? op : 'get' }),
          logger,
        });
      },
    },
    {
      // Read at boot (a tokens file that cannot be used stops the boot), then again whenever it changes.
      provide: TokenRegistry,
      inject: [GuardianMetrics],
      useFactory: (metrics: GuardianMetrics) =>
        TokenRegistry.open({
          file: access.tokensFile,
          adminToken: access.adminToken,
          logger,
          metrics,
        }),
    },
    { provide: ArchiveWriter, useExisting: SealedArchive },
    {
      provide: SealedArchive,
      useFactory: () =>
        new SealedArchive({
          spanDir: config.paths.spanDir,
          anchorDir: config.paths.anchorDir,
          keepSpans: archive.keepSpans,
          replica: runtime.replica,
          // One open run per session in memory, bounded like the sessions themselves.
          maxOpenRuns: compaction.maxSessions,
          crashPoint: config.testCrashPoint,
          log: writerLog({ ...archive.log, name: runtime.replica }),
          onWarning: (w) =>
            logger.warn({ warning: w }, 'archive side write failed; the span itself is sealed'),
        }),
    },
    {
      provide: CompactionLog,
      useFactory: () =>
        new CompactionLog({ logDir: config.paths.logDir, replica: runtime.replica, gatherMs: BEHIND_MS }),
    },
    {
      provide: Receipts,
      useFactory: () =>
        new Receipts({
          receiptsDir: config.paths.receiptsDir,
          replica: runtime.replica,
          gatherMs: BEHIND_MS,
        }),
    },
  ];
}

/**
 * The sidecar. Controllers are thin; the request path is ProxyService -> CompactionService (parse, measure) ->
 * CompactionEngine (plan, stretch, rebuild), then OverflowRecovery when the upstream refuses a request as too long,
 * with the format adapters at the edge and the policy in @guardian/compaction.
 */
@Module({})
export class AppModule {
  static forRoot(options: GuardianModuleOptions): DynamicModule {
    return {
      module: AppModule,
      controllers: [HealthController, GuardianController, ArchiveController, CaptureController],
      providers: [
        ...infrastructure(options),
        { provide: APP_FILTER, useClass: GuardianErrorFilter },
        AccessGuard,
        AccessPolicy,
        ArchiveGuard,
        AnswerBookkeeping,
        ArchiveReaders,
        CaptureIntake,
        CaptureService,
        CompactionEngine,
        CompactionService,
        DecisionReporter,
        ExchangeFactory,
        FastPath,
        GuardianState,
        Observability,
        OverflowRecovery,
        Precompactor,
        ProxyService,
        RequestCounter,
        RequestMeasure,
        SessionTable,
        SpanRecorder,
        SpanVolumeProbe,
        StretchArchiver,
        StretchService,
        Summariser,
        SummaryBreaker,
        WindowService,
      ],
    };
  }
}
