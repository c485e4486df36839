import { access } from 'node:fs/promises';

import { ArchiveWriter, type SpanInput, type SpanRef } from './archive-writer';
import { ArchiveError } from './archive-error';
import { assertRunId } from './archive-paths';
import { ensureDir, isErrno, parseCrashPoint, type ArmedCrash, type CrashPoint } from './durable-fs';
import { RunWriter, type ArchiveWarning, type PlacedSpan, type SealedHead } from './run-writer';
import type { SpanLog } from './span-log';
import { WriterLog, type WriterLogOptions } from './writer-log';

/** Options of the sealed span writer. */
export interface SealedArchiveOptions {
  spanDir: string;
  /** GUARDIAN_SEAL_ANCHOR_DIR: every new head is appended to `<anchorDir>/<run>.jsonl`. */
  anchorDir?: string | null;
  /** GUARDIAN_KEEP_SPANS: spans kept per run; the newest is never pruned. */
  keepSpans: number;
  /** This process's replica tag (ARCHITECTURE.md#files). */
  replica: string;
  now?: () => Date;
  /**
   * Test-only: `after-span-fsync` | `after-rename` | `mid-chain-line` | `before-commit` | `before-checkpoint`,
   * optionally `@N` for the N-th write.
   */
  crashPoint?: string;
  /** Capture journal segment size; 2 MB by default (ARCHITECTURE.md#files). */
  journalSegmentBytes?: number;
  /**
   * Runs kept open at once, least recently written first out (GUARDIAN_MAX_SESSIONS in the sidecar): each open run
   * holds its writer's state, and a long-lived process meets sessions without end. A closed run's journal segment is
   * sealed; the session's next write opens a new run. Default: no bound.
   */
  maxOpenRuns?: number;
  /** Called when a derived write (index, anchor, prune) fails after the span was sealed. */
  onWarning?: (warning: ArchiveWarning) => void;
  /**
   * Names a new run; default `<yyyymmdd-HHMMSS>-<session hash 8>-<replica>` (Claude Code capture: `cc-...`,
   * ARCHITECTURE.md#files).
   */
  runName?: (ctx: { stamp: string; sessionHash: string; replica: string }) => string;
  /** This writer's transparency log (issue 29); none when absent (tests, the laptop hook). */
  log?: Omit<WriterLogOptions, 'spanDir'> | null;
}

const TWO_MB = 2 * 1024 * 1024;

/** True when the run's folder is no longer there (its writer cannot go on in it). */
async function runVanished(writer: RunWriter): Promise<boolean> {
  try {
    await access(writer.dir);
    return false;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return true;
    // Cannot tell (a volume gone unreadable): the write failure stands as it is.
    return false;
  }
}

/**
 * Open runs are kept per (owner, session): a run's run.json names one owner, so a session hash sent under another
 * owner (a Claude Code capture posts its own) must never land in a run that owner does not own.
 */
function runKey(sessionHash: string, ownerHash: string | null): string {
  return ownerHash === null ? sessionHash : `${ownerHash}/${sessionHash}`;
}

/** The session a write belongs to: its hash and owner key the run, its name goes into a new run's run.json. */
interface RunSession {
  sessionHash: string;
  ownerHash: string | null;
  sessionName?: string | undefined;
}

function runSession(input: { sessionHash: string; ownerHash?: string; sessionName?: string }): RunSession {
  return {
    sessionHash: input.sessionHash,
    ownerHash: input.ownerHash ?? null,
    sessionName: input.sessionName,
  };
}

function utcStamp(date: Date): string {
  const iso = date.toISOString(); // 2026-10-30T14:30:12.000Z
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
}

/**
 * Writes spans into sealed runs: one run per session per process, spans numbered from 0001, each sealed in
 * the run's hash chain and indexed (docs/ARCHIVE_FORMAT.md). A write lands whole or throws ARCHIVE_WRITE_FAILED;
 * the caller then defers the span (ARCHITECTURE.md#fail-open rule 3).
 */
export class SealedArchive extends ArchiveWriter {
  private readonly runs = new Map<string, Promise<RunWriter>>();
  /** Runs whose chain grew since the last takeSealed(), with their newest sealed head. */
  private readonly sealed = new Map<string, SealedHead>();
  /** Names of runs that vanished under this process: never used again, since an anchor file may still name them. */
  private readonly vanished = new Set<string>();
  private readonly now: () => Date;
  private readonly crash: ArmedCrash | null;
  private spanWrites = 0;
  private readonly log: WriterLog | null;

  constructor(private readonly opts: SealedArchiveOptions) {
    super();
    this.now = opts.now ?? (() => new Date());
    this.log =
      opts.log == null
        ? null
        : new WriterLog(
            { ...opts.log, spanDir: opts.spanDir },
            opts.replica,
            (w) => opts.onWarning?.({ code: w.code, run: opts.log?.name ?? '', cause: w.cause }),
            this.now,
          );
    // Test-only crash points may also come from the environment so a child process can be armed.
    this.crash = parseCrashPoint(opts.crashPoint);
  }

  override async write(input: SpanInput): Promise<SpanRef> {
    const { sealed, logged: _logged, ...ref } = await this.place(input);
    try {
      await sealed;
    } catch (cause) {
      throw new ArchiveError('ARCHIVE_WRITE_FAILED', `span not sealed in run ${ref.run}`, { cause });
    }
    // write() (the CLI, tests) returns once a checkpoint covers the span; place() never waits for the log.
    await this.log?.settled();
    return ref;
  }

  override async place(input: SpanInput): Promise<PlacedSpan & { logged: Promise<void> }> {
    // Numbered at entry: concurrent writes of several sessions must not shift a crash point armed for the N-th.
    const write = ++this.spanWrites;
    const placed = await this.withWriter(runSession(input), 'span', (w) => w.placeSpan(input, write));
    // The commit hands the span's entry to the log before `sealed` settles; the log's settling then covers it.
    const logged = placed.sealed.then(
      () => this.logSettled(),
      () => undefined,
    );
    return { ...placed, logged };
  }

  /** Appends messages to the session's capture journal (used by CaptureJournal). */
  async appendJournal(input: {
    sessionHash: string;
    ownerHash?: string;
    sessionName?: string;
    entries: { at: Date; message: unknown }[];
  }): Promise<void> {
    await this.withWriter(runSession(input), 'journal', (w) => w.appendJournal(input.entries));
  }

  /**
   * The runs this process sealed new chain lines in since the last call, each with its newest head; then forgets
   * them. The seal monitor verifies exactly that much (issue 12 defect 3): no run without news, no write in flight.
   */
  takeSealed(): SealedHead[] {
    const out = [...this.sealed.values()];
    this.sealed.clear();
    return out;
  }

  /** The run this process writes for a session, if it has written one. */
  async runFor(sessionHash: string, ownerHash: string | null = null): Promise<string | undefined> {
    const writer = this.runs.get(runKey(sessionHash, ownerHash));
    return writer === undefined ? undefined : (await writer).run;
  }

  /**
   * At boot, before the first write: reads the log key (a GUARDIAN_LOG_KEY_FILE that cannot be used throws
   * ARCHIVE_LOG_KEY_UNUSABLE) and logs what writers of this host that died left without entries (issue 29).
   */
  async start(): Promise<void> {
    await this.log?.start();
  }

  /** Closes and seals every open journal segment, then waits for the log's last checkpoint and lets the log go. */
  async close(): Promise<void> {
    await this.closeJournals();
    await this.stop();
  }

  /** Closes and seals every open journal segment (the sidecar's journal at shutdown; its log is stopped after). */
  async closeJournals(): Promise<void> {
    const writers = await Promise.allSettled([...this.runs.values()]);
    for (const settled of writers) {
      if (settled.status === 'fulfilled') await settled.value.closeJournal();
    }
    await this.log?.settled();
  }

  /**
   * After the last write: waits for the log's last checkpoint, then marks the log released (every span line naming it
   * has its entry) and drops its lock; a log that missed entries stays unreleased for the next writer of this host.
   */
  async stop(): Promise<void> {
    await this.log?.stop();
  }

  /** Settles once every committed span is in a signed checkpoint (or its failure was reported). */
  async logSettled(): Promise<void> {
    await this.log?.settled();
  }

  /** This writer's log once it has opened (at the first commit), else null. */
  get spanLog(): SpanLog | null {
    return this.log?.current ?? null;
  }

  /**
   * Runs one write on the session's run. A run whose folder has vanished (the data folder deleted, `--prune`
   * removing an idle run this process still had open) is replaced by a new run and the write is tried there once:
   * a cached writer would otherwise fail with ENOENT until a restart (issue 12 defect 2).
   */
  private async withWriter<T>(
    session: RunSession,
    what: 'span' | 'journal',
    write: (writer: RunWriter) => Promise<T>,
  ): Promise<T> {
    const { sessionHash } = session;
    const key = runKey(sessionHash, session.ownerHash);
    for (let attempt = 1; ; attempt += 1) {
      const pending = this.writerFor(key, session);
      const writer = await pending;
      if (writer.poisoned && attempt === 1) {
        // Torn by a commit that failed after its spans were placed: a torn run is never written again.
        if (this.runs.get(sessionHash) === pending) this.runs.delete(sessionHash);
        continue;
      }
      try {
        return await write(writer);
      } catch (cause) {
        const vanished = await runVanished(writer);
        if (vanished) this.vanished.add(writer.run);
        // A torn run is never written again; the next write opens a fresh run (ARCHITECTURE.md#files, --repair).
        if ((vanished || writer.poisoned) && this.runs.get(key) === pending) this.runs.delete(key);
        if (vanished && attempt === 1) continue;
        throw new ArchiveError('ARCHIVE_WRITE_FAILED', `${what} not written to run ${writer.run}`, { cause });
      }
    }
  }

  private writerFor(key: string, session: RunSession): Promise<RunWriter> {
    let writer = this.runs.get(key);
    if (writer !== undefined) {
      // Most recently used last, so the first key is the run to close when there are too many.
      this.runs.delete(key);
      this.runs.set(key, writer);
    } else {
      writer = this.openRun(session);
      this.runs.set(key, writer);
      // A run that could not be created (full volume) is retried by the next write.
      const opening = writer;
      opening.catch(() => {
        if (this.runs.get(key) === opening) this.runs.delete(key);
      });
      this.closeLeastRecent();
    }
    return writer;
  }

  private closeLeastRecent(): void {
    const max = this.opts.maxOpenRuns ?? Number.POSITIVE_INFINITY;
    for (const [session, oldest] of this.runs) {
      if (this.runs.size <= max) break;
      this.runs.delete(session);
      // Writes queued on it still land (the writer keeps its own queue); its open journal segment is sealed.
      oldest.then(
        (w) =>
          w
            .closeJournal()
            .catch((cause: unknown) =>
              this.opts.onWarning?.({ code: 'ARCHIVE_JOURNAL_FAILED', run: w.run, cause }),
            ),
        // A run that never opened has nothing to close (writerFor already let it go).
        () => undefined,
      );
    }
  }

  private async openRun({ sessionHash, ownerHash, sessionName }: RunSession): Promise<RunWriter> {
    const stamp = utcStamp(this.now());
    const base =
      this.opts.runName?.({ stamp, sessionHash, replica: this.opts.replica }) ??
      `${stamp}-${sessionHash.slice(0, 8)}-${this.opts.replica}`;
    try {
      await ensureDir(this.opts.spanDir);
    } catch (cause) {
      throw new ArchiveError('ARCHIVE_WRITE_FAILED', 'span folder not writable', { cause });
    }
    // The log is claimed before a span line names it, so whoever finds the line can tell whether its writer lives.
    await this.log?.ready();
    for (let attempt = 1; ; attempt += 1) {
      const run = assertRunId(attempt === 1 ? base : `${base}-${attempt}`);
      if (this.vanished.has(run)) continue;
      try {
        return await RunWriter.create(
          {
            spanDir: this.opts.spanDir,
            anchorDir: this.opts.anchorDir ?? null,
            run,
            keepSpans: this.opts.keepSpans,
            journalSegmentBytes: this.opts.journalSegmentBytes ?? TWO_MB,
            now: this.now,
            crashAt: (point, write) => this.crashAt(point, write),
            onWarning: (w) => {
              // Lines written, commit failed: their entries never came; a successor looks for them (issue 29).
              if (w.code === 'ARCHIVE_COMMIT_FAILED') this.log?.markIncomplete();
              this.opts.onWarning?.(w);
            },
            onSealed: (head) => this.sealed.set(head.run, head),
            onCommitted: (entries) => this.log?.append(entries),
            log: this.opts.log?.name ?? null,
          },
          { sessionHash, ownerHash, sessionName, replica: this.opts.replica },
        );
      } catch (err) {
        // Same second, same session, same replica (a second archive in one process): take the next suffix.
        if (isErrno(err, 'EEXIST') && attempt < 100) continue;
        throw new ArchiveError('ARCHIVE_WRITE_FAILED', `run ${run} could not be created`, { cause: err });
      }
    }
  }

  private crashAt(point: CrashPoint, write: number | undefined): boolean {
    return this.crash !== null && this.crash.point === point && this.crash.onWrite === write;
  }
}
