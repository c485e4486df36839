import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { DynamicModule, Module, type Provider } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';

import {
  ArchiveWriter,
  CompactionLog,
  Receipts,
  SealedArchive,
  UsageLog,
  writerLog,
} from '@guardian/archive';
import { InMemoryMemoStore, MemoStore, RedisMemoStore } from '@guardian/memo';
import { GuardianMetrics, MEMO_OPS } from '@guardian/telemetry';
import { UpstreamClient } from '@guardian/upstream';

import { AccessPolicy } from './access/access-policy';
import { ArchiveController } from './archive-api/archive.controller';
import { ArchiveReaders } from './archive-api/archive-readers';
import { SealMonitor } from './archive-verifier/seal-monitor';
import { CaptureController } from './archive-api/capture.controller';
import { CaptureIntake } from './archive-api/capture-intake';
import { TokenRegistry } from './access/token-registry';
import { AnswerBookkeeping } from './compaction/answer/answer-bookkeeping';
import { AnswerReporter } from './compaction/answer/answer-reporter';
import { UsageRecorder } from './compaction/answer/usage-recorder';
import { UsageSample } from './compaction/answer/usage-sample';
import { DecideReporter } from './compaction/decide/decide-reporter';
import { PrecompactJobs } from './compaction/decide/precompact-jobs';
import { RequestReporter } from './compaction/request/request-reporter';
import { RequestStage } from './compaction/request/request-stage';
import { HandleSealer } from './compaction/native/compaction-handle';
import { loadHandleKey } from './compaction/native/handle-key';
import { MessagesCompaction } from './compaction/native/messages-compaction';
import { MessagesContext } from './compaction/native/messages-context';
import { NativeArchive } from './compaction/native/native-archive';
import { NativeCompaction } from './compaction/native/native-compaction';
import { NativeMode, NativeProbeReporter } from './compaction/native/native-mode';
import { NativeHandles } from './compaction/native/native-handles';
import { NativeReporter } from './compaction/native/native-reporter';
import { NativeStretch } from './compaction/native/native-stretch';
import { ResponsesCompaction } from './compaction/native/responses-compaction';
import { ResponsesItems } from './compaction/native/responses-items';
import { ResponsesThreshold } from './compaction/native/responses-threshold';
import { CaptureService } from './compaction/answer/capture.service';
import { CompactionEngine } from './compaction/decide/compaction-engine';
import { ForwardForecast } from './compaction/decide/forward-forecast';
import { CompactionService } from './compaction/compaction.service';
import { HandoffController } from './guardian-api/handoff.controller';
import { DecisionReporter } from './compaction/decide/decision-reporter';
import { HandoffWriter } from './compaction/decide/handoff-writer';
import { ExchangeFactory } from './compaction/answer/exchange';
import { FastPath } from './compaction/request/fast-path';
import { OverflowRecovery } from './compaction/decide/overflow-recovery';
import { Precompactor } from './compaction/answer/precompactor';
import { RequestCounter } from './compaction/request/request-counter';
import { SessionTable } from './state/session-table';
import { SpanRecorder } from './compaction/decide/span-recorder';
import { StretchArchiver } from './compaction/decide/stretch-archiver';
import { StretchService } from './compaction/decide/stretch-service';
import { Summariser } from './compaction/decide/summariser';
import { SummaryBreaker } from './compaction/decide/summary-breaker';
import { WindowService } from './compaction/request/window.service';
import { GuardianConfig } from './config/guardian-config';
import { GuardianRuntime } from './config/guardian-runtime';
import { AccessGuard, ArchiveGuard, HostGate } from './guardian-api/access.guard';
import { ConsoleController } from './guardian-api/console.controller';
import { ConsoleLog } from './guardian-api/console-log';
import { GuardianController } from './guardian-api/guardian.controller';
import { HealthController } from './health/health.controller';
import { SpanVolumeProbe } from './health/span-volume-probe';
import { GuardianErrorFilter } from './http/error.filter';
import { ServingState } from './http/serving-state';
import { GuardianLogger } from './observability/guardian-logger';
import { FailOpen } from './observability/fail-open';
import { UsageLedger } from './observability/usage-ledger';
import { recordUpstreamWait } from './observability/request-timing';
import { ProxyFront } from './proxy/proxy-front';
import { ProxyReporter } from './proxy/proxy-reporter';
import { OpenStreams } from './proxy/stream-ending';
import { ProxyDoor } from './proxy/proxy-door';
import { ProxyService } from './proxy/proxy.service';
import { TokenCounts } from './proxy/count-tokens';
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

/**
 * Every object the sidecar is made of that is not a plain injectable class, built here and only here: the outside
 * world (metrics, the upstream, the memo, the archive's writers), the edge (the host gate and the ProxyFront that
 * serves the proxied paths, ADR 0013), and the background seal check. bootstrap.ts only creates the app from them,
 * listens and hands back the handle.
 */
function constructed({ config, logger, runtime }: GuardianModuleOptions): Provider[] {
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
      inject: [FailOpen],
      useFactory: (failOpen: FailOpen) =>
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
            // Entries dropped while the log cannot open: counted and logged once (the spans stay sealed).
            w.code === 'ARCHIVE_LOG_BEHIND'
              ? failOpen.report('archive', 'log_entries_dropped', { route: 'other', err: w.cause })
              : logger.warn({ warning: w }, 'archive side write failed; the span itself is sealed'),
        }),
    },
    {
      // The background seal check (docs/adr/0120), its own provider: started once the app is up, never on the
      // request path.
      provide: SealMonitor,
      inject: [SealedArchive, GuardianState, GuardianMetrics],
      useFactory: (sealed: SealedArchive, state: GuardianState, metrics: GuardianMetrics) =>
        new SealMonitor({
          spanDir: config.paths.spanDir,
          anchorDir: config.paths.anchorDir,
          archive: sealed,
          state,
          metrics,
          logger,
        }),
    },
    {
      provide: CompactionLog,
      useFactory: () =>
        new CompactionLog({ logDir: config.paths.logDir, replica: runtime.replica, gatherMs: BEHIND_MS }),
    },
    {
      provide: UsageLog,
      useFactory: () =>
        new UsageLog({ usageDir: config.paths.usageDir, replica: runtime.replica, gatherMs: BEHIND_MS }),
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
    { provide: ServingState, useValue: new ServingState() },
    { provide: OpenStreams, useValue: new OpenStreams() },
    // DNS rebinding (ARCHITECTURE.md#access): one gate for the front and the Fastify hooks.
    { provide: HostGate, useValue: new HostGate(config) },
    {
      // The key that seals compaction handles (docs/native-compaction.md): a mounted Secret, else made on the volume.
      provide: HandleSealer,
      inject: [FailOpen],
      useFactory: (failOpen: FailOpen) => {
        // A mounted Secret that cannot be read stops the boot. The key guardian makes itself lives on the data
        // volume; a volume it cannot write (read-only, root-owned) must not stop the sidecar: a key for this process
        // only seals handles then (they do not survive a restart or reach another replica), counted and logged once.
        if (config.native.keyFile)
          return new HandleSealer(loadHandleKey(config.native.keyFile, { mustExist: true }));
        try {
          return new HandleSealer(
            loadHandleKey(join(config.paths.dataDir, 'native-compaction.key'), { mustExist: false }),
          );
        } catch (err) {
          failOpen.report('archive', 'handle_key_ephemeral', { route: 'other', err });
          return new HandleSealer(randomBytes(32));
        }
      },
    },
    {
      // Everything guardian does not own goes upstream: every method, every path, through the node:http front.
      provide: ProxyFront,
      inject: [ProxyService, HostGate, GuardianMetrics, ServingState, OpenStreams],
      useFactory: (
        service: ProxyService,
        gate: HostGate,
        metrics: GuardianMetrics,
        serving: ServingState,
        streams: OpenStreams,
      ) =>
        new ProxyFront({
          proxy: service,
          gate,
          metrics,
          logger,
          bodyLimit: proxy.maxBodyBytes,
          serving,
          streams,
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
      controllers: [
        HealthController,
        GuardianController,
        ConsoleController,
        ArchiveController,
        CaptureController,
        HandoffController,
      ],
      providers: [
        ...constructed(options),
        { provide: APP_FILTER, useClass: GuardianErrorFilter },
        AccessGuard,
        AccessPolicy,
        ArchiveGuard,
        AnswerBookkeeping,
        AnswerReporter,
        ArchiveReaders,
        CaptureIntake,
        CaptureService,
        CompactionEngine,
        CompactionService,
        ConsoleLog,
        DecideReporter,
        DecisionReporter,
        ExchangeFactory,
        FailOpen,
        FastPath,
        ForwardForecast,
        GuardianState,
        HandoffWriter,
        MessagesCompaction,
        MessagesContext,
        NativeArchive,
        NativeCompaction,
        NativeMode,
        NativeProbeReporter,
        NativeHandles,
        NativeReporter,
        NativeStretch,
        OverflowRecovery,
        PrecompactJobs,
        Precompactor,
        ProxyDoor,
        ProxyReporter,
        ProxyService,
        RequestCounter,
        RequestReporter,
        RequestStage,
        ResponsesCompaction,
        ResponsesItems,
        ResponsesThreshold,
        SessionTable,
        SpanRecorder,
        SpanVolumeProbe,
        StretchArchiver,
        StretchService,
        Summariser,
        SummaryBreaker,
        TokenCounts,
        UsageLedger,
        UsageRecorder,
        UsageSample,
        WindowService,
      ],
    };
  }
}
