import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import type { SpanInput, SpanRef } from './archive-writer';
import { CHAIN_FILE, INDEX_FILE, RUN_FILE, journalFileName, spanFileName } from './archive-paths';
import { sha256Hex } from './canonical-json';
import { GENESIS_PREV, anchorLineText, sealLine, type ChainBody, type ChainLine } from './chain-line';
import { buildDigest } from './digest';
import {
  FILE_MODE,
  appendDurable,
  appendPlain,
  crashNow,
  ensureDir,
  fsyncDir,
  fsyncFile,
  writeFileDurable,
  writeFileInPlace,
  type CrashPoint,
} from './durable-fs';
import { boundedSessionName, buildSpanRecord } from './span-record';

/** A non-fatal problem: the span landed, a derived file (index, anchor, prune) did not (issue 4 item 8). */
export interface ArchiveWarning {
  code:
    | 'ARCHIVE_INDEX_FAILED'
    | 'ARCHIVE_ANCHOR_FAILED'
    | 'ARCHIVE_PRUNE_FAILED'
    | 'ARCHIVE_JOURNAL_FAILED'
    | 'ARCHIVE_COMMIT_FAILED'
    | 'ARCHIVE_LOG_FAILED'
    | 'ARCHIVE_LOG_BEHIND';
  run: string;
  cause: unknown;
}

export interface RunWriterOptions {
  spanDir: string;
  anchorDir: string | null;
  run: string;
  keepSpans: number;
  journalSegmentBytes: number;
  now: () => Date;
  /** Returns true when the test-only crash point should fire now, in the span write numbered `write` (from 1). */
  crashAt: (point: CrashPoint, write: number | undefined) => boolean;
  onWarning: (warning: ArchiveWarning) => void;
  /** Told the run's new head after every chain line lands (the seal monitor verifies up to it, never past). */
  onSealed?: (head: SealedHead) => void;
  /** Told the log entries of the spans a commit made durable, in placement order (issue 29: the writer's log). */
  onCommitted?: (entries: string[]) => void;
  /** The writer's log, named in each span line (issue 29): the log that owes the span an entry. */
  log?: string | null;
}

/**
 * How far a run's chain is sealed: every line up to `seq` is in chain.jsonl (its first `bytes` bytes), fsynced, and
 * the files those lines name were in place before them. A reader that stops there never meets a write in flight.
 */
export interface SealedHead {
  run: string;
  seq: number;
  head: string;
  bytes: number;
}

type NewLine = Omit<ChainBody, 'v' | 'seq' | 'prev' | 'at'>;

/** A span placed, whose chain line is written: what a request waits for; `sealed` settles at the commit. */
export interface PlacedSpan extends SpanRef {
  sealed: Promise<void>;
}

/** A span placed and not committed yet: its line, and what the commit derives from it (anchor, index). */
interface Uncommitted {
  line: ChainLine;
  /** `context-guardian span <run> <n> sha256:<hex>` (docs/ARCHIVE_FORMAT.md#the-log). */
  entry: string;
  indexLine: () => string;
  /** The span write's number in its process (test-only crash points). */
  write: number | undefined;
}

/**
 * The only writer of one run (ARCHITECTURE.md#files): span numbers, chain head, journal segment and pruning state live
 * here, and every write goes through one promise queue so chain lines never interleave.
 */
export class RunWriter {
  /** Set when a write failed after a file landed: the run's tail is torn and this process stops using it. */
  poisoned = false;
  private queue: Promise<unknown> = Promise.resolve();
  private seq = 0;
  private prev = GENESIS_PREV;
  private chainBytes = 0;
  /** Number of the span write in progress (test-only crash points); undefined outside one. */
  private write: number | undefined;
  private nextSpan = 1;
  private readonly live: string[] = [];
  private nextSegment = 1;
  private openSegment: { segment: number; bytes: number } | null = null;
  private journalLines = 0;
  private anchorReady = false;
  /** Spans placed whose commit has not run yet, and the commit queued for them. */
  private readonly uncommitted: Uncommitted[] = [];
  private commitQueued: Promise<void> | undefined;
  /** chain.jsonl's length after each line not yet committed (a sealed head reports its bytes). */
  private readonly lineEnds = new Map<number, number>();
  readonly dir: string;

  private constructor(private readonly opts: RunWriterOptions) {
    this.dir = path.join(opts.spanDir, opts.run);
  }

  get run(): string {
    return this.opts.run;
  }

  /** Creates the run folder (0700) and its run.json; fails if the folder already exists. */
  static async create(
    opts: RunWriterOptions,
    meta: {
      sessionHash: string;
      ownerHash: string | null;
      sessionName?: string | undefined;
      replica: string;
    },
  ): Promise<RunWriter> {
    const writer = new RunWriter(opts);
    await fsp.mkdir(writer.dir, { mode: 0o700 });
    const name = boundedSessionName(meta.sessionName);
    const runJson = {
      run: opts.run,
      session_hash: meta.sessionHash,
      owner_hash: meta.ownerHash,
      replica: meta.replica,
      started_at: opts.now().toISOString(),
      ...(name === undefined ? {} : { session_name: name }),
    };
    try {
      await writeFileDurable(path.join(writer.dir, RUN_FILE), `${JSON.stringify(runJson, null, 2)}\n`);
    } catch (err) {
      // A full volume takes the folder but not run.json: remove the empty folder, or every deferred write would
      // leave one behind. If even that fails, the original error is the one to report.
      await fsp.rmdir(writer.dir).catch(() => undefined);
      throw err;
    }
    return writer;
  }

  /** `write` numbers this span write in its process, for the test-only crash points (`after-rename@3`). */
  async writeSpan(input: SpanInput, write?: number): Promise<SpanRef> {
    const { sealed, ...ref } = await this.placeSpan(input, write);
    await sealed;
    return ref;
  }

  /**
   * Places a span: its file fsynced and renamed into place, its chain line written (ADR 0013). The folder's fsync,
   * the chain's fsync, the anchor and index lines and pruning follow in the run's next commit, which takes every span
   * placed since the last one (group commit); `sealed` settles then. A crash of the process before the commit keeps
   * the span and its line (they are in the file); a power cut may leave the span without its line, a torn tail that
   * `--repair` seals.
   */
  placeSpan(input: SpanInput, write?: number): Promise<PlacedSpan> {
    return this.enqueue(async () => {
      // The queue runs one task at a time, so the number is this task's until it ends.
      this.write = write;
      try {
        const ref = await this.doPlaceSpan(input);
        return { ...ref, sealed: this.scheduleCommit() };
      } finally {
        this.write = undefined;
      }
    });
  }

  appendJournal(entries: { at: Date; message: unknown }[]): Promise<void> {
    return this.enqueue(() => this.doAppendJournal(entries));
  }

  closeJournal(): Promise<void> {
    return this.enqueue(() => this.doCloseSegment());
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const result = this.queue.then(task);
    // The queue only orders writes; each caller sees its own rejection through `result`.
    this.queue = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  private async doPlaceSpan(input: SpanInput): Promise<SpanRef> {
    const span = this.nextSpan;
    const file = spanFileName(span);
    const record = buildSpanRecord(this.opts.run, span, input);
    const bytes = Buffer.from(`${JSON.stringify(record, null, 2)}\n`, 'utf8');
    await writeFileInPlace(path.join(this.dir, file), bytes, {
      afterFsync: () => this.maybeCrash('after-span-fsync'),
      afterRename: () => {
        // From here the file is on disk: its number is used whatever happens next.
        this.nextSpan = span + 1;
        this.maybeCrash('after-rename');
      },
    });
    const sha256 = sha256Hex(bytes);
    const log = this.opts.log ?? undefined;
    const line = await this.guard(() =>
      this.writeChainLine({ kind: 'span', file, sha256, size: bytes.length, log }),
    );
    this.live.push(file);
    const entry = `context-guardian span ${this.opts.run} ${span} sha256:${sha256}`;
    // The index is derived (rebuilt by --reindex): built and appended at the commit, off the request's path.
    this.uncommitted.push({
      line,
      entry,
      indexLine: () =>
        `${JSON.stringify(buildDigest({ ...record, file, fileText: bytes.toString('utf8') }))}\n`,
      write: this.write,
    });
    return { run: this.opts.run, span, ref: `${this.opts.run}/${file}` };
  }

  /** One commit for every span placed since the last (group commit); the queue keeps it in order with the rest. */
  private scheduleCommit(): Promise<void> {
    if (this.commitQueued === undefined) {
      this.commitQueued = this.enqueue(() => {
        this.commitQueued = undefined;
        return this.commit();
      });
    }
    return this.commitQueued;
  }

  /**
   * Makes the placed spans durable in the order docs/ARCHIVE_FORMAT.md promises: the folder's fsync (their names),
   * then the chain's (their lines); then the derived writes: anchor lines, index lines, pruning.
   */
  private async commit(): Promise<void> {
    // A commit that failed left this run torn: the spans placed since are not sealed either.
    if (this.poisoned) throw new Error(`run ${this.opts.run} is torn; its placed spans are not sealed`);
    const batch = this.uncommitted.splice(0);
    if (batch.length === 0) return;
    if (batch.some((u) => this.opts.crashAt('before-commit', u.write))) crashNow();
    try {
      await fsyncDir(this.dir);
      await fsyncFile(path.join(this.dir, CHAIN_FILE));
    } catch (cause) {
      // The lines are written but maybe not durable: this run is not written again (a new one opens).
      this.poisoned = true;
      this.opts.onWarning({ code: 'ARCHIVE_COMMIT_FAILED', run: this.opts.run, cause });
      throw cause;
    }
    const last = batch[batch.length - 1]!.line;
    this.opts.onSealed?.({
      run: this.opts.run,
      seq: last.seq,
      head: last.hash,
      bytes: this.chainBytesAt(last.seq),
    });
    // Only durable spans get an entry: a log never vouches for a file a power cut could still take back.
    this.opts.onCommitted?.(batch.map((u) => u.entry));
    // Test-only: dies between the commit and the checkpoint that would cover it (issue 29's crash window).
    if (batch.some((u) => this.opts.crashAt('before-checkpoint', u.write))) crashNow();
    await this.anchor(batch.map((u) => u.line));
    await this.derived('ARCHIVE_INDEX_FAILED', () =>
      fsp.appendFile(path.join(this.dir, INDEX_FILE), batch.map((u) => u.indexLine()).join(''), {
        mode: FILE_MODE,
      }),
    );
    await this.derived('ARCHIVE_PRUNE_FAILED', () => this.prune());
  }

  private async doAppendJournal(entries: { at: Date; message: unknown }[]): Promise<void> {
    if (entries.length === 0) return;
    if (this.openSegment === null) {
      this.openSegment = { segment: this.nextSegment, bytes: 0 };
      this.nextSegment += 1;
    }
    const text = entries
      .map(
        (e) => `${JSON.stringify({ n: this.journalLines++, at: e.at.toISOString(), message: e.message })}\n`,
      )
      .join('');
    const target = path.join(this.dir, journalFileName(this.openSegment.segment, true));
    await this.guard(() => appendDurable(target, text));
    this.openSegment.bytes += Buffer.byteLength(text);
    if (this.openSegment.bytes >= this.opts.journalSegmentBytes) await this.doCloseSegment();
  }

  /** Closes the open segment: rename to its sealed name, then seal it in the chain (ARCHITECTURE.md#files). */
  private async doCloseSegment(): Promise<void> {
    const open = this.openSegment;
    if (open === null) return;
    const from = path.join(this.dir, journalFileName(open.segment, true));
    const file = journalFileName(open.segment, false);
    // Lines after placed spans' lines are made durable only after theirs (and their names) are.
    await this.commit();
    await this.guard(async () => {
      await fsp.rename(from, path.join(this.dir, file));
      this.openSegment = null;
      await fsyncDir(this.dir);
      const bytes = await fsp.readFile(path.join(this.dir, file));
      await this.appendChain({ kind: 'journal', file, sha256: sha256Hex(bytes), size: bytes.length });
    });
  }

  /** Keep-spans: a prune record first, then the deletes; never the run's newest span (ARCHITECTURE.md#files). */
  private async prune(): Promise<void> {
    const keep = Math.max(this.opts.keepSpans, 1);
    if (this.live.length <= keep) return;
    const victims = this.live.splice(0, this.live.length - keep);
    await this.guard(() => this.appendChain({ kind: 'prune', files: victims }));
    for (const file of victims) await fsp.unlink(path.join(this.dir, file));
    await fsyncDir(this.dir);
  }

  /** Appends a chain line and makes it durable at once, with its anchor line (journal, prune and repair lines). */
  private async appendChain(fields: NewLine): Promise<ChainLine> {
    const line = await this.writeChainLine(fields);
    await fsyncFile(path.join(this.dir, CHAIN_FILE));
    this.opts.onSealed?.({ run: this.opts.run, seq: line.seq, head: line.hash, bytes: this.chainBytes });
    this.lineEnds.clear();
    await this.anchor([line]);
    return line;
  }

  /** Writes the next chain line, without waiting for the disk (the caller syncs it, or the commit does). */
  private async writeChainLine(fields: NewLine): Promise<ChainLine> {
    const body: ChainBody = {
      v: 1,
      seq: this.seq + 1,
      prev: this.prev,
      at: this.opts.now().toISOString(),
      ...fields,
    };
    const { line, text } = sealLine(body);
    const target = path.join(this.dir, CHAIN_FILE);
    if (this.crashAtChainLine()) {
      const handle = await fsp.open(target, 'a', FILE_MODE);
      await handle.appendFile(text.slice(0, Math.floor(text.length / 2)));
      await handle.sync();
      crashNow();
    }
    await appendPlain(target, text);
    this.seq = line.seq;
    this.prev = line.hash;
    this.chainBytes += Buffer.byteLength(text);
    this.lineEnds.set(line.seq, this.chainBytes);
    return line;
  }

  private chainBytesAt(seq: number): number {
    const bytes = this.lineEnds.get(seq) ?? this.chainBytes;
    for (const s of [...this.lineEnds.keys()]) if (s <= seq) this.lineEnds.delete(s);
    return bytes;
  }

  /** The anchor lines of `lines`, in one append (GUARDIAN_SEAL_ANCHOR_DIR); derived: a failure only warns. */
  private async anchor(lines: readonly ChainLine[]): Promise<void> {
    const anchorDir = this.opts.anchorDir;
    if (anchorDir === null || lines.length === 0) return;
    await this.derived('ARCHIVE_ANCHOR_FAILED', async () => {
      if (!this.anchorReady) await ensureDir(anchorDir);
      this.anchorReady = true;
      await appendDurable(
        path.join(anchorDir, `${this.opts.run}.jsonl`),
        lines.map((l) => anchorLineText(l.seq, l.hash)).join(''),
      );
    });
  }

  private crashAtChainLine(): boolean {
    return this.opts.crashAt('mid-chain-line', this.write);
  }

  private maybeCrash(point: CrashPoint): void {
    if (this.opts.crashAt(point, this.write)) crashNow();
  }

  /** A failure here leaves a file without its chain line: the run is torn and is not written again. */
  private async guard<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      this.poisoned = true;
      throw err;
    }
  }

  /** Derived files (index, anchor, prune) never fail a sealed write: warn and go on (issue 4 item 8). */
  private async derived(code: ArchiveWarning['code'], step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (cause) {
      this.opts.onWarning({ code, run: this.opts.run, cause });
    }
  }
}
