import { Injectable, type OnModuleDestroy } from '@nestjs/common';

import {
  ArchiveWriter,
  CompactionLog,
  Receipts,
  type CompactionLogInput,
  type SpanInput,
  type SpanRef,
} from '@guardian/archive';
import { genAiAttributes, withSpan } from '@guardian/telemetry';
import { codeOf } from '@guardian/errors';
import { MemoStore } from '@guardian/memo';

import { DecideReporter } from './decide-reporter';

/**
 * Writes what compaction evicts and the log lines `--savings` reads. A span that cannot be written is deferred,
 * not fatal (ARCHITECTURE.md#fail-open rule 3): the caller still forwards the compacted request and a later turn
 * writes it. A log or receipt line that cannot be written is a warning: the request is not affected.
 */
@Injectable()
export class SpanRecorder implements OnModuleDestroy {
  private readonly pending = new Set<Promise<void>>();
  /** Spans placed by this process whose log checkpoint is not written yet, by ref (a native handle names it). */
  private readonly logging = new Map<string, Promise<void>>();

  constructor(
    private readonly archive: ArchiveWriter,
    private readonly log: CompactionLog,
    private readonly receipts: Receipts,
    private readonly reporter: DecideReporter,
    private readonly memo: MemoStore,
  ) {}

  /**
   * The span's ref once it is in place (its file fsynced and renamed, its chain line written), or undefined when the
   * write failed (counted as archive_deferred). Its commit (the folder's and chain's fsync, the anchor) follows behind
   * the request and is awaited at shutdown (ADR 0013).
   */
  async write(input: SpanInput): Promise<SpanRef | undefined> {
    const started = performance.now();
    try {
      const { sealed, logged, ...ref } = await withSpan(
        'guardian.archive.write',
        {
          ...genAiAttributes({ model: input.model }),
          'guardian.span.kind': input.kind,
          'guardian.span.messages': input.messages.length,
          'guardian.tokens_before': input.tokensBefore,
          'guardian.tokens_after': input.tokensAfter,
        },
        () => this.archive.place(input),
      );
      this.reporter.spanWritten((performance.now() - started) / 1000);
      this.logging.set(
        ref.ref,
        logged.finally(() => this.logging.delete(ref.ref)),
      );
      this.behind(
        sealed.catch((err: unknown) =>
          // The span is on disk and named in this request; its run is torn now, and --verify names it.
          this.reporter.archiveBehindFailed('commit_failed', input, err),
        ),
      );
      return ref;
    } catch (err) {
      const code = errnoOf(err);
      const reason =
        code === 'ENOSPC'
          ? 'no_space'
          : code === 'EROFS'
            ? 'read_only'
            : code === 'EACCES' || code === 'EPERM'
              ? 'permission'
              : 'other';
      this.reporter.spanDeferred(input, reason, err);
      return undefined;
    }
  }

  /**
   * Settles once the writer's log covers a span this process placed (or its commit or log failed); at once for any
   * other ref. It never rejects.
   */
  async logged(ref: string): Promise<void> {
    await this.logging.get(ref);
  }

  /**
   * Writes the log line after the request has gone on (it only feeds `--savings` and the receipts). Pending writes are
   * awaited at shutdown so none is lost to a clean stop.
   */
  logLineLater(line: CompactionLogInput, tokensBefore: number, tokensAfter: number): void {
    this.behind(this.logLine(line, tokensBefore, tokensAfter));
  }

  /** Work that goes on after the request, awaited at shutdown. */
  private behind(work: Promise<void>): void {
    const p = work.finally(() => this.pending.delete(p));
    this.pending.add(p);
    this.reporter.behind(p);
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  async logLine(input: CompactionLogInput, tokensBefore: number, tokensAfter: number): Promise<void> {
    // One time for the log line and the minute it is counted in, so the console's merge of the two (the larger count
    // per minute) never sees one compaction in two minutes.
    const line = { ...input, ts: input.ts ?? new Date().toISOString() };
    // The chart's per-minute count, in the process and in Redis when configured (issue 31 item 1): it is kept even
    // when the log line below cannot be written. The memo is fail-soft and does not throw.
    if (!line.dry_run && line.evicted_messages > 0)
      await this.memo.countCompaction(Date.parse(line.ts), line.owner_hash ?? undefined);
    try {
      await this.log.append(line);
      if (!line.dry_run)
        await this.receipts.record(
          { kind: 'compaction', tokens_before: tokensBefore, tokens_after: tokensAfter },
          line.owner_hash ?? undefined,
        );
    } catch (err) {
      this.reporter.archiveBehindFailed('log_write', line, err);
    }
  }

  async recallToolCall(ownerHash?: string): Promise<void> {
    try {
      await this.receipts.record({ kind: 'recall_tool_call', chars_returned: 0 }, ownerHash);
    } catch (err) {
      this.reporter.archiveBehindFailed('receipt_write', { route: 'other' }, err);
    }
  }
}

function errnoOf(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e; depth++) {
    const c = codeOf(e);
    if (c?.startsWith('E')) return c;
    e = e instanceof Error ? e.cause : undefined;
  }
  return undefined;
}
