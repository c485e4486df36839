import { setTimeout as sleep } from 'node:timers/promises';

import type { OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';

import {
  ArchiveError,
  verifyArchive,
  verifyIncrement,
  verifyRun,
  type ChainBreak,
  type RunVerdict,
  type SealedHead,
  type VerifyCursor,
} from '@guardian/archive';
import { LruMap } from '@guardian/collections';
import type { GuardianMetrics } from '@guardian/telemetry';

import type { GuardianState } from '../state/guardian-state';
import type { GuardianLogger } from '../observability/guardian-logger';

export interface SealMonitorOptions {
  spanDir: string;
  anchorDir: string | null;
  /** The archive this process writes: it tells which runs grew, and up to which sealed head (SealedArchive). */
  archive: { takeSealed(): SealedHead[] };
  state: GuardianState;
  metrics: GuardianMetrics;
  logger: GuardianLogger;
  /** Full archive verify period. Default 10 minutes. */
  intervalMs?: number;
  /** How often this process's new chain lines are verified, and the wait before a full verify's break is looked
   * at again. Default 1 s. */
  settleMs?: number;
}

/** Runs whose verified position is remembered; a run forgotten here is verified from its start next time. */
const MAX_CURSORS = 4096;

/** A run and the break found in it. */
type Found = Pick<RunVerdict, 'run' | 'break'>;

function sameBreak(a: ChainBreak | null, b: ChainBreak | null): boolean {
  return a !== null && b !== null && a.kind === b.kind && a.seq === b.seq && a.file === b.file;
}

/**
 * Keeps `seal_status` and `guardian_archive_seal_ok` honest, always off the request path (docs/adr/0120):
 * - at boot and every `intervalMs`, the whole archive is verified (every replica's runs: the volume is shared,
 *   ARCHITECTURE.md#files); a break it finds counts only if the same break is there again `settleMs` later,
 *   because another replica may have been between a span's rename and its chain line;
 * - every `settleMs`, the chain lines this process sealed since the last look are verified, and only those
 *   (`verifyIncrement` up to the head the writer reported): never a span still being written, never a run without
 *   news. It used to re-verify every run of the process after each compaction, queueing checks without bound
 *   (issue 12 defect 3: 25.6 s of CPU in 30 s with 3,000 runs, a SIGTERM that waited minutes, false alarms).
 * One check runs at a time; a tick that finds one running is skipped. `stop()` aborts the check in progress.
 * Status is `unknown` until the first full verify ends; the gauge stays 1 until a break is confirmed.
 * A provider of its own (app.module.ts): it starts once the app has booted and stops with it.
 */
export class SealMonitor implements OnApplicationBootstrap, OnModuleDestroy {
  /** The writers whose new chain lines are verified every `settleMs`: the compaction archive, and any other
   * writer of this process that registers with `watch()` (the capture intake's `cc-` runs). */
  private readonly writers: Array<{ takeSealed(): SealedHead[] }>;
  /** Each run's verified head, the run verified least recently first out past MAX_CURSORS. */
  private readonly cursors = new LruMap<string, VerifyCursor>(MAX_CURSORS);
  private readonly ownBroken = new Map<string, ChainBreak>();
  /** Each run's verdict from the last full verify (a break only once confirmed), for verdictOf(). */
  private lastFull = new Map<string, Pick<RunVerdict, 'status' | 'lines'>>();
  private readonly logged = new Set<string>();
  private readonly abort = new AbortController();
  private fullBroken: boolean | undefined;
  private fullDue = false;
  private busy: Promise<void> | undefined;
  private timers: NodeJS.Timeout[] = [];

  constructor(private readonly opts: SealMonitorOptions) {
    this.writers = [opts.archive];
  }

  /** Verifies `archive`'s new chain lines too, as this process's own (a second writer on the same volume). */
  watch(archive: { takeSealed(): SealedHead[] }): void {
    if (!this.writers.includes(archive)) this.writers.push(archive);
  }

  private get settleMs(): number {
    return this.opts.settleMs ?? 1000;
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  start(): void {
    const tick = setInterval(() => this.tick(), this.settleMs);
    const full = setInterval(
      () => {
        this.fullDue = true;
        this.tick();
      },
      this.opts.intervalMs ?? 10 * 60_000,
    );
    for (const t of [tick, full]) t.unref();
    this.timers = [tick, full];
    this.fullDue = true;
    this.tick();
  }

  /** Nest's hooks: a provider of its own, started once the app is up, stopped before it closes. */
  onApplicationBootstrap(): void {
    this.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.stop();
  }

  /** Stops the timers and aborts the check in progress; resolves once nothing reads the archive any more. */
  async stop(): Promise<void> {
    this.abort.abort();
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.busy;
  }

  /** Verifies the whole archive now (after a check in progress). */
  checkAll(): Promise<void> {
    return this.exclusive(() => this.full());
  }

  /** Verifies what this process sealed since the last look, now (after a check in progress). */
  checkOwn(): Promise<void> {
    return this.exclusive(() => this.own());
  }

  /**
   * The latest word on `run` (SealKnowledge, for the receipts): a break found since, else the last full verify's,
   * else what the incremental check verified of this process's own runs; undefined for a run not seen yet.
   */
  verdictOf(run: string): Pick<RunVerdict, 'status' | 'lines'> | undefined {
    const full = this.lastFull.get(run);
    if (this.ownBroken.has(run)) return { status: 'break', lines: full?.lines ?? 0 };
    const cursor = this.cursors.peek(run);
    if (cursor && (full === undefined || cursor.seq > full.lines)) return { status: 'ok', lines: cursor.seq };
    return full;
  }

  private tick(): void {
    if (this.busy !== undefined || this.stopped) return;
    const due = this.fullDue;
    void this.exclusive(() => (due ? this.full() : this.own()));
  }

  private async exclusive(job: () => Promise<void>): Promise<void> {
    while (this.busy !== undefined) await this.busy;
    if (this.stopped) return;
    const run = job().catch((err: unknown) => this.cannotRun(err));
    this.busy = run.finally(() => {
      this.busy = undefined;
    });
    await this.busy;
  }

  private cannotRun(err: unknown): void {
    // Stopped mid-check at shutdown: nothing to report.
    if (ArchiveError.is(err, 'ARCHIVE_ABORTED') || this.stopped) return;
    // The verify could not read the archive (permissions, a volume gone): the status stays as last known and the
    // request path is unaffected; the next period tries again.
    this.opts.logger.warn(
      { err: err instanceof Error ? err.message : String(err) },
      'archive seal check could not run; seal status unchanged',
    );
  }

  private async own(): Promise<void> {
    const { spanDir } = this.opts;
    const heads = this.writers.flatMap((w) => w.takeSealed());
    if (heads.length === 0) return;
    const found: Found[] = [];
    for (const head of heads) {
      if (this.stopped) return;
      let verdict;
      try {
        verdict = await verifyIncrement({ spanDir, from: this.cursors.peek(head.run), to: head });
      } catch (err) {
        // The run's folder vanished (deleted, pruned): its writer moves on to a new run (issue 12 defect 2).
        if (ArchiveError.is(err, 'ARCHIVE_NOT_FOUND')) {
          this.cursors.delete(head.run);
          continue;
        }
        throw err;
      }
      if (verdict.break !== null) {
        this.ownBroken.set(head.run, verdict.break);
        found.push({ run: head.run, break: verdict.break });
        continue;
      }
      this.cursors.set(head.run, verdict.cursor);
    }
    this.publish(found);
  }

  private async full(): Promise<void> {
    this.fullDue = false;
    const { spanDir, anchorDir } = this.opts;
    const signal = this.abort.signal;
    let runs: RunVerdict[];
    try {
      runs = (await verifyArchive({ spanDir, anchorDir, signal })).runs;
    } catch (err) {
      // No span folder yet: nothing has been archived, so nothing can be broken.
      if (!ArchiveError.is(err, 'ARCHIVE_NOT_FOUND')) throw err;
      runs = [];
    }
    let breaks = runs.filter((v) => v.status === 'break');
    if (breaks.length > 0) {
      await sleep(this.settleMs, undefined, { signal, ref: false });
      const confirmed: RunVerdict[] = [];
      for (const v of breaks) {
        const again = await verifyRun({ spanDir, anchorDir, run: v.run, signal });
        if (sameBreak(v.break, again.break)) confirmed.push(again);
      }
      breaks = confirmed;
    }
    this.fullBroken = breaks.length > 0;
    const confirmed = new Set(breaks.map((v) => v.run));
    this.lastFull = new Map(
      runs.map((v) => [
        v.run,
        { status: v.status === 'break' && !confirmed.has(v.run) ? 'ok' : v.status, lines: v.lines },
      ]),
    );
    // The full verify covered this process's runs too.
    this.ownBroken.clear();
    this.publish(breaks);
  }

  private publish(breaks: Found[]): void {
    const { state, metrics, logger } = this.opts;
    const broken = this.fullBroken === true || this.ownBroken.size > 0;
    state.setSeal(
      broken ? 'broken' : this.fullBroken === undefined ? 'unknown' : 'ok',
      new Date().toISOString(),
    );
    metrics.sealOk.set(broken ? 0 : 1);
    const fresh = breaks.filter((v) => {
      const key = `${v.run}:${v.break?.kind}:${v.break?.seq}`;
      if (this.logged.has(key) || this.logged.size >= 1024) return false;
      this.logged.add(key);
      return true;
    });
    if (fresh.length > 0)
      logger.error(
        { runs: fresh.map((v) => ({ run: v.run, kind: v.break?.kind, seq: v.break?.seq })) },
        'archive hash chain broken: run context-guardian-recall --verify for details',
      );
  }
}
