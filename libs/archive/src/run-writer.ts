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
  crashNow,
  ensureDir,
  fsyncDir,
  writeFileDurable,
  type CrashPoint,
} from './durable-fs';
import { buildSpanRecord } from './span-record';

/** A non-fatal problem: the span landed, a derived file (index, anchor, prune) did not (issue 4 item 8). */
export interface ArchiveWarning {
  code: 'ARCHIVE_INDEX_FAILED' | 'ARCHIVE_ANCHOR_FAILED' | 'ARCHIVE_PRUNE_FAILED' | 'ARCHIVE_JOURNAL_FAILED';
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
    meta: { sessionHash: string; ownerHash: string | null; replica: string },
  ): Promise<RunWriter> {
    const writer = new RunWriter(opts);
    await fsp.mkdir(writer.dir, { mode: 0o700 });
    const runJson = {
      run: opts.run,
      session_hash: meta.sessionHash,
      owner_hash: meta.ownerHash,
      replica: meta.replica,
      started_at: opts.now().toISOString(),
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
  writeSpan(input: SpanInput, write?: number): Promise<SpanRef> {
    return this.enqueue(async () => {
      // The queue runs one task at a time, so the number is this task's until it ends.
      this.write = write;
      try {
        return await this.doWriteSpan(input);
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

  private async doWriteSpan(input: SpanInput): Promise<SpanRef> {
    const span = this.nextSpan;
    const file = spanFileName(span);
    const record = buildSpanRecord(this.opts.run, span, input);
    const bytes = Buffer.from(`${JSON.stringify(record, null, 2)}\n`, 'utf8');
    await writeFileDurable(path.join(this.dir, file), bytes, {
      afterFsync: () => this.maybeCrash('after-span-fsync'),
      afterRename: () => {
        // From here the file is on disk: its number is used whatever happens next.
        this.nextSpan = span + 1;
        this.maybeCrash('after-rename');
      },
    });
    await this.guard(() =>
      this.appendChain({ kind: 'span', file, sha256: sha256Hex(bytes), size: bytes.length }),
    );
    this.live.push(file);
    // The index is derived (rebuilt by --reindex), so it is appended without its own fsync.
    await this.derived('ARCHIVE_INDEX_FAILED', () =>
      fsp.appendFile(
        path.join(this.dir, INDEX_FILE),
        `${JSON.stringify(buildDigest({ ...record, file }))}\n`,
        {
          mode: FILE_MODE,
        },
      ),
    );
    await this.derived('ARCHIVE_PRUNE_FAILED', () => this.prune());
    return { run: this.opts.run, span, ref: `${this.opts.run}/${file}` };
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

  private async appendChain(fields: NewLine): Promise<ChainLine> {
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
    await appendDurable(target, text);
    this.seq = line.seq;
    this.prev = line.hash;
    this.chainBytes += Buffer.byteLength(text);
    this.opts.onSealed?.({ run: this.opts.run, seq: this.seq, head: this.prev, bytes: this.chainBytes });
    const anchorDir = this.opts.anchorDir;
    if (anchorDir !== null) {
      await this.derived('ARCHIVE_ANCHOR_FAILED', async () => {
        if (!this.anchorReady) await ensureDir(anchorDir);
        this.anchorReady = true;
        await appendDurable(
          path.join(anchorDir, `${this.opts.run}.jsonl`),
          anchorLineText(line.seq, line.hash),
        );
      });
    }
    return line;
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
