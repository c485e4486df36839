import { isArchiveError, listRuns, verifyArchive, verifyRun, type RunVerdict } from '@guardian/archive';
import type { GuardianMetrics } from '@guardian/telemetry';

import type { GuardianState } from '../state/guardian-state';
import type { GuardianLogger } from './guardian-logger';

export interface SealMonitorOptions {
  spanDir: string;
  anchorDir: string | null;
  /** This process's replica tag: its own runs end in `-<replica>` (CONTRACTS §4). */
  replica: string;
  state: GuardianState;
  metrics: GuardianMetrics;
  logger: GuardianLogger;
  /** Full archive verify period. Default 10 minutes. */
  intervalMs?: number;
  /** Quiet time after a span write before this replica's runs are re-verified; also the wait before a break is
   * confirmed by a second look. Default 1 s. */
  settleMs?: number;
}

/** Event kinds that mean a span or spill was just written by this process. */
const WRITE_EVENTS = new Set(['compaction', 'oversized_spill']);

/**
 * Keeps `seal_status` and `guardian_archive_seal_ok` honest, always off the request path:
 * - at boot and every `intervalMs`, the whole archive is verified with @guardian/archive's `verifyArchive`
 *   (every replica's runs: the volume is shared, CONTRACTS §4);
 * - a moment after this process writes a span, its own runs are re-verified (they are bounded by
 *   GUARDIAN_KEEP_SPANS, so this stays cheap);
 * - a run found broken is looked at once more after `settleMs` before it counts, because a verify that runs
 *   between a span file's rename and its chain line (another replica writing) sees a torn tail that is not one.
 * Checks run one at a time. Status is `unknown` until the first full verify ends; the gauge stays 1 until a
 * break is confirmed (a 0 at boot would page someone for nothing).
 */
export class SealMonitor {
  private queue: Promise<void> = Promise.resolve();
  private fullBroken: boolean | undefined;
  private ownBroken = false;
  private interval: NodeJS.Timeout | undefined;
  private settleTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private unsubscribe: (() => void) | undefined;
  private readonly onEvent = (e: { kind: string }): void => {
    if (!WRITE_EVENTS.has(e.kind) || this.settleTimer || this.stopped) return;
    this.settleTimer = setTimeout(() => {
      this.settleTimer = undefined;
      void this.enqueue(() => this.checkOwn());
    }, this.settleMs);
    this.settleTimer.unref();
  };

  constructor(private readonly opts: SealMonitorOptions) {}

  private get settleMs(): number {
    return this.opts.settleMs ?? 1000;
  }

  start(): void {
    this.unsubscribe = this.opts.state.subscribe(this.onEvent);
    this.interval = setInterval(() => void this.checkAll(), this.opts.intervalMs ?? 10 * 60_000);
    this.interval.unref();
    void this.checkAll();
  }

  /** Stops the timers and waits for a check in progress, so nothing reads the archive after shutdown. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearInterval(this.interval);
    clearTimeout(this.settleTimer);
    await this.queue;
  }

  /** Verifies the whole archive now (queued behind a check in progress). */
  checkAll(): Promise<void> {
    return this.enqueue(async () => {
      const verdicts = await this.verify(undefined);
      if (verdicts === undefined) return;
      this.fullBroken = verdicts.some((v) => v.status === 'break');
      this.ownBroken = false; // the full verify covered this replica's runs too
      this.publish(verdicts);
    });
  }

  private async checkOwn(): Promise<void> {
    const suffix = `-${this.opts.replica}`;
    const verdicts = await this.verify((run) => run.endsWith(suffix));
    if (verdicts === undefined) return;
    this.ownBroken = verdicts.some((v) => v.status === 'break');
    this.publish(verdicts);
  }

  private enqueue(check: () => Promise<void>): Promise<void> {
    if (this.stopped) return this.queue;
    this.queue = this.queue.then(check).catch((err: unknown) => {
      // The verify could not read the archive (permissions, a volume gone): the status stays as last known and
      // the request path is unaffected; the next period tries again.
      this.opts.logger.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'archive seal check could not run; seal status unchanged',
      );
    });
    return this.queue;
  }

  /** Verdicts for the runs `pick` selects (all when undefined), each break confirmed by a second look. */
  private async verify(pick: ((run: string) => boolean) | undefined): Promise<RunVerdict[] | undefined> {
    const { spanDir, anchorDir } = this.opts;
    let verdicts: RunVerdict[];
    try {
      if (pick === undefined) verdicts = (await verifyArchive({ spanDir, anchorDir })).runs;
      else {
        const runs = (await listRuns({ spanDir })).map((r) => r.run).filter(pick);
        verdicts = [];
        for (const run of runs) verdicts.push(await verifyRun({ spanDir, anchorDir, run }));
      }
    } catch (err) {
      // No span folder yet: nothing has been archived, so nothing can be broken.
      if (isArchiveError(err) && err.code === 'ARCHIVE_NOT_FOUND') return [];
      throw err;
    }
    if (verdicts.some((v) => v.status === 'break')) {
      await new Promise((resolve) => setTimeout(resolve, this.settleMs).unref());
      if (this.stopped) return undefined;
      for (const [i, v] of verdicts.entries()) {
        if (v.status === 'break') verdicts[i] = await verifyRun({ spanDir, anchorDir, run: v.run });
      }
    }
    return verdicts;
  }

  private publish(verdicts: RunVerdict[]): void {
    const { state, metrics, logger } = this.opts;
    const broken = this.fullBroken === true || this.ownBroken;
    state.sealStatus = broken ? 'broken' : this.fullBroken === undefined ? 'unknown' : 'ok';
    state.sealCheckedAt = new Date().toISOString();
    metrics.sealOk.set(broken ? 0 : 1);
    const breaks = verdicts.filter((v) => v.status === 'break');
    if (breaks.length > 0)
      logger.error(
        { runs: breaks.map((v) => ({ run: v.run, kind: v.break?.kind, seq: v.break?.seq })) },
        'archive hash chain broken: run context-guardian-recall --verify for details',
      );
  }
}
