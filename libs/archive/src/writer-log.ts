import { promises as fsp } from 'node:fs';
import { hostname } from 'node:os';
import * as path from 'node:path';

import { ArchiveError } from './archive-error';
import { ensureDir } from './durable-fs';
import { loadLogKey } from './log-key';
import { logLeftovers } from './log-leftovers';
import { SpanLog } from './span-log';
import { listLogs, logFolder, logsRoot } from './span-log-read';
import {
  WriterLock,
  lockNameOf,
  readWriter,
  takeWaiting,
  writeWriter,
  writerRecord,
  type WriterRecord,
} from './writer-lock';

/** Where a writer keeps its log (issue 29). */
export interface WriterLogOptions {
  spanDir: string;
  /** The log's folder name under `<span dir>/.tlog/`: the writer (replica tag, `-capture` for the intake). */
  name: string;
  /** The checkpoint origin and key name (GUARDIAN_LOG_ORIGIN, then `/<name>`). */
  origin: string;
  /** GUARDIAN_LOG_KEY_FILE (a Kubernetes Secret mount); default `<span dir>/.tlog/log.key`, made at first start. */
  keyFile?: string | null;
  /**
   * A log short-lived writers on one host take in turns (the laptop capture hook, ADR 0028): its lock is waited for,
   * until `signal` aborts, and no run naming the log starts before it is held.
   */
  shared?: boolean;
  signal?: AbortSignal;
  /** Entries held while the log cannot open (default 10,000, about 1.2 MB); past that they are dropped. */
  maxWaiting?: number;
}

/** What the log tells its archive: a checkpoint or an open that failed, or entries dropped while it could not open. */
export interface LogWarning {
  code: 'ARCHIVE_LOG_FAILED' | 'ARCHIVE_LOG_BEHIND';
  cause: unknown;
}

/** Entries held while the log cannot open (about 1.2 MB); past that they are dropped and left to the next writer. */
const MAX_WAITING = 10_000;

/** The default key file on the span volume, shared by every writer there (each signs under its own origin). */
function defaultLogKeyFile(spanDir: string): string {
  return path.join(logsRoot(spanDir), 'log.key');
}

/**
 * The log of one span writer (docs/ARCHIVE_FORMAT.md#the-log). It is claimed before the first run that names it (its
 * lock taken, writer.json written), so whoever finds a span line naming it can tell whether its writer still lives;
 * entries handed over before it opens wait in order (bounded) and go into its first checkpoint. A clean stop marks
 * it released; a writer that dies leaves it unreleased, and the next writer started on its host logs the spans it
 * left without entries (issue 29, the crash window between a commit and its checkpoint).
 */
export class WriterLog {
  private seed: Promise<Buffer> | null = null;
  private log: SpanLog | null = null;
  private lock: WriterLock | null = null;
  private opening: Promise<void> | null = null;
  private readonly waiting: string[] = [];
  /** Some entry may never reach a checkpoint (dropped, a failed flush, a failed commit): not released at stop. */
  private incomplete = false;
  /** A run naming this log was started. */
  private named = false;

  constructor(
    private readonly opts: WriterLogOptions,
    /** The writer's replica tag: every run it makes carries it in its name. */
    private readonly replica: string,
    private readonly onWarning: (warning: LogWarning) => void,
    private readonly now: () => Date,
  ) {}

  /**
   * At boot: reads the key (GUARDIAN_LOG_KEY_FILE that cannot be used throws ARCHIVE_LOG_KEY_UNUSABLE: a boot error),
   * then logs what writers of this host that died left without entries. Anything else only warns (fail open).
   */
  async start(): Promise<void> {
    try {
      await this.key();
    } catch (err) {
      if (this.opts.keyFile != null) {
        const why = err instanceof Error ? err.message : String(err);
        const code = (err as { cause?: { code?: unknown } }).cause?.code;
        throw new ArchiveError(
          'ARCHIVE_LOG_KEY_UNUSABLE',
          `${why}${typeof code === 'string' ? ` (${code})` : ''}`,
          { cause: err },
        );
      }
      this.warn(err);
      return;
    }
    await this.completeDeadLogs().catch((cause: unknown) => this.warn(cause));
  }

  /**
   * Called before a run naming this log is made: claims the log first. Never throws, but for a shared log not taken
   * (ARCHIVE_WRITE_FAILED: the run is not started, and its spans wait for the next capture).
   */
  async ready(): Promise<void> {
    this.named = true;
    if (this.log === null) await (this.opening ??= this.open());
    if (this.opts.shared === true && this.log === null)
      throw new ArchiveError('ARCHIVE_WRITE_FAILED', `the log ${this.opts.name} could not be taken`);
  }

  /** Hands entries over in commit order; never throws and never waits (a failure is a warning). */
  append(entries: readonly string[]): void {
    if (this.log !== null) {
      // Reported by the log's own onWarning; left unreleased, so the next writer here logs what the flush lost.
      this.log.append(entries).catch(() => (this.incomplete = true));
      return;
    }
    if (this.waiting.length + entries.length > (this.opts.maxWaiting ?? MAX_WAITING)) {
      this.incomplete = true;
      this.onWarning({
        code: 'ARCHIVE_LOG_BEHIND',
        cause: new Error(
          `${entries.length} log entries dropped: ${this.waiting.length} already wait for a log that cannot open; the next writer started on this host logs them`,
        ),
      });
    } else for (const e of entries) this.waiting.push(e);
    this.opening ??= this.open();
  }

  /** A commit failed after its lines were written: the log is not released at stop, so a successor looks again. */
  markIncomplete(): void {
    this.incomplete = true;
  }

  /** Settles once every entry handed over so far is in a checkpoint, or has failed and been reported. */
  async settled(): Promise<void> {
    await this.opening;
    // Entries still waiting on a log that failed to open (a key being made by another writer, a full volume): one
    // more try before shutdown, not only at the next commit, which may never come.
    if (this.log === null && this.waiting.length > 0) await (this.opening ??= this.open());
    await this.log?.settled();
  }

  /**
   * After the last write: waits for the last checkpoint, marks the log released when every entry is in it (else it
   * stays unreleased for the next writer here), and lets the lock go.
   */
  async stop(): Promise<void> {
    await this.settled();
    const log = this.log;
    try {
      if (log !== null && !this.incomplete && this.waiting.length === 0) {
        const dir = logFolder(this.opts.spanDir, this.opts.name);
        if (!this.named && log.checkpoint === null) await fsp.rm(dir, { recursive: true, force: true });
        else await writeWriter(dir, this.record(true));
      }
    } catch (cause) {
      this.warn(cause);
    } finally {
      await this.lock?.release();
      this.lock = null;
      // Let go: a later write claims the log again rather than append to a tree another taker may have grown.
      this.log = null;
    }
  }

  /** The open log, if it opened. */
  get current(): SpanLog | null {
    return this.log;
  }

  private key(): Promise<Buffer> {
    this.seed ??= loadLogKey({
      file: this.opts.keyFile ?? defaultLogKeyFile(this.opts.spanDir),
      create: this.opts.keyFile == null,
      name: this.opts.origin,
    }).catch((err: unknown) => {
      this.seed = null; // a key another writer is still making, a volume back later: read again next time
      throw err;
    });
    return this.seed;
  }

  private record(released: boolean): WriterRecord {
    return writerRecord({
      replica: this.replica,
      origin: this.opts.origin,
      lock: this.lock,
      released,
      at: this.now(),
    });
  }

  private warn(cause: unknown): void {
    this.onWarning({ code: 'ARCHIVE_LOG_FAILED', cause });
  }

  /** Claims the log: its lock, its key, what a writer before left unlogged (a shared log), then writer.json. */
  private async open(): Promise<void> {
    try {
      const seed = await this.key();
      const dir = logFolder(this.opts.spanDir, this.opts.name);
      await ensureDir(dir);
      if (this.lock === null) {
        const name = await lockNameOf(dir);
        const lock =
          this.opts.shared === true ? await takeWaiting(name, this.opts.signal) : await WriterLock.take(name);
        if (lock === 'held') throw new Error(`another live process holds the log ${this.opts.name}`);
        this.lock = lock;
      }
      const log = await SpanLog.open({
        dir,
        origin: this.opts.origin,
        seed,
        onWarning: (cause) => this.warn(cause),
      });
      const before = await readWriter(dir);
      if (before !== null && !before.released)
        await logLeftovers({
          spanDir: this.opts.spanDir,
          name: this.opts.name,
          replica: before.replica,
          log,
          dir,
        });
      await writeWriter(dir, this.record(false));
      this.log = log;
      const queued = this.waiting.splice(0);
      if (queued.length > 0) this.append(queued);
    } catch (cause) {
      // The spans are sealed whatever happens here (fail-open, ARCHITECTURE.md#fail-open); the entries wait for the
      // next commit's try, and --verify names every span without an entry meanwhile.
      this.warn(cause);
    } finally {
      this.opening = null;
    }
  }

  /**
   * The logs of this host whose writer died unreleased (its lock held by no one): the spans it left without entries
   * are appended there, in its own log, under its own origin, and it is marked released. A log taken by another
   * successor meanwhile is left to it (the lock is held).
   */
  private async completeDeadLogs(): Promise<void> {
    const seed = await this.key();
    for (const name of await listLogs(this.opts.spanDir)) {
      if (name === this.opts.name) continue; // a shared log of ours is completed when it is claimed
      const dir = logFolder(this.opts.spanDir, name);
      const rec = await readWriter(dir);
      if (rec === null || rec.released || rec.lock === null || rec.host !== hostname()) continue;
      const lock = await WriterLock.take(rec.lock);
      if (lock === null || lock === 'held') continue;
      try {
        const log = await SpanLog.open({ dir, origin: rec.origin, seed, onWarning: (c) => this.warn(c) });
        const { named } = await logLeftovers({
          spanDir: this.opts.spanDir,
          name,
          replica: rec.replica,
          log,
          dir,
        });
        // A writer that died before its first span left an empty folder: nothing names it, nothing to keep.
        if (named === 0 && log.checkpoint === null) await fsp.rm(dir, { recursive: true, force: true });
        else await writeWriter(dir, { ...rec, released: true, at: this.now().toISOString() });
      } catch (cause) {
        this.warn(cause); // a log under another key, a volume error: left as it is, --verify names what it lacks
      } finally {
        await lock.release();
      }
    }
  }
}

/**
 * A writer's log options from GUARDIAN_LOG_ORIGIN (a prefix; default `context-guardian/<host name>`, which in a
 * Kubernetes pod names the deployment's pod) and GUARDIAN_LOG_KEY_FILE: the origin is `<prefix>/<writer>`, so every
 * writer on a volume has its own log and key name.
 */
export function writerLog(opts: {
  name: string;
  originPrefix?: string | undefined;
  keyFile?: string | undefined;
}): Omit<WriterLogOptions, 'spanDir'> {
  const prefix = opts.originPrefix ?? `context-guardian/${hostname().replace(/[^A-Za-z0-9._-]/g, '-')}`;
  return { name: opts.name, origin: `${prefix}/${opts.name}`, keyFile: opts.keyFile ?? null };
}
