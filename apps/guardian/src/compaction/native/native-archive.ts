import { Injectable } from '@nestjs/common';

import { ArchiveError, LogProofs, openSpan, parseSpanRef, type OpenedSpan } from '@guardian/archive';
import { logOnce } from '@guardian/telemetry';

import { GuardianConfig } from '../../config/guardian-config';
import { GuardianLogger } from '../../observability/guardian-logger';
import { SpanRecorder } from '../decide/span-recorder';
import type { HandleLog } from './compaction-handle';

/**
 * The archive as a compaction handle sees it (docs/native-compaction.md, "The handle"): the log checkpoint that covers
 * a handle's span, named when the handle is sealed, and the span read back when the memo has lost the summary.
 * Neither ever fails the request: a handle without a checkpoint, or a block that cannot be rebuilt, is logged once.
 */
@Injectable()
export class NativeArchive {
  /** One per process: what it read of each log stays valid while the logs grow. */
  private readonly proofs: LogProofs;

  constructor(
    private readonly config: GuardianConfig,
    private readonly recorder: SpanRecorder,
    private readonly logger: GuardianLogger,
  ) {
    this.proofs = new LogProofs(config.paths.spanDir);
  }

  /**
   * Where the span `ref` is in a writer's log, under a checkpoint that covers it; null when no log holds it. A span
   * this process just wrote is waited for: its group commit and the checkpoint after it (ADR 0017, about a second at
   * most; the compaction it seals just waited on a summary).
   */
  async position(ref: string | null): Promise<HandleLog | null> {
    const named = ref === null ? null : parseSpanRef(ref);
    if (ref === null || named === null) return null;
    try {
      await this.recorder.logged(ref);
      const at = await this.proofs.locate(named);
      return at && { log: at.log, index: at.index, size: at.size, root: at.root, sha256: at.sha256 };
    } catch (err) {
      // Reading the logs failed (the volume): the handle goes out without a checkpoint; --verify names a broken log.
      logOnce(
        this.logger,
        'native_handle_log',
        { err: err instanceof Error ? err.message : String(err) },
        'a compaction handle names no log checkpoint: the span logs could not be read (logged once)',
      );
      return null;
    }
  }

  /**
   * The span a handle names, read in its owner's runs and checked against the sha256 its log entry had; undefined when
   * it cannot be had (pruned, edited since, another owner's, unreadable), logged once per reason.
   */
  async open(ref: string, owner: string | null, sha256: string | undefined): Promise<OpenedSpan | undefined> {
    try {
      return await openSpan({
        spanDir: this.config.paths.spanDir,
        ref,
        ...(owner === null ? {} : { scope: { ownerHash: owner } }),
        ...(sha256 === undefined ? {} : { sha256 }),
      });
    } catch (err) {
      const code = err instanceof ArchiveError ? err.code : 'other';
      logOnce(
        this.logger,
        `native_handle_span:${code}`,
        { code, err: err instanceof Error ? err.message : String(err) },
        'a compaction handle whose summary the memo no longer holds could not be rebuilt from its span; ' +
          'its block names the span only (logged once per reason)',
      );
      return undefined;
    }
  }
}
