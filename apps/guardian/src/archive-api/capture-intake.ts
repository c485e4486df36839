import { Injectable, type OnApplicationShutdown } from '@nestjs/common';

import {
  CAPTURE_ROUTE,
  SealedArchive,
  archivedLineBytes,
  captureEnd,
  captureRuns,
  sessionHash,
  writerLog,
} from '@guardian/archive';
import type { CaptureAnswer, CaptureRequest } from '@guardian/client';

import type { Viewer } from '../access/access-policy';
import { GuardianConfig } from '../config/guardian-config';
import { GuardianRuntime } from '../config/guardian-runtime';
import { GuardianLogger } from '../observability/guardian-logger';
import { SealMonitor } from '../archive-verifier/seal-monitor';

/**
 * Claude Code captures posted by the hook (`POST /guardian/capture`, team mode): the transcript lines land in a
 * sealed `cc-<hash 12>-<replica>` run of the caller's own, exactly as the hook would write them on a laptop. A
 * capture resumes only where the archive ends (the same rule the hook applies locally, libs/archive capture-runs), so
 * a retried or overlapping post never duplicates or tears the transcript.
 */
@Injectable()
export class CaptureIntake implements OnApplicationShutdown {
  private readonly archive: SealedArchive;
  /** One capture per stored session at a time in this process. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    private readonly config: GuardianConfig,
    runtime: GuardianRuntime,
    logger: GuardianLogger,
    seal: SealMonitor,
  ) {
    this.archive = new SealedArchive({
      spanDir: config.paths.spanDir,
      anchorDir: config.paths.anchorDir,
      keepSpans: config.archive.keepSpans,
      replica: runtime.replica,
      maxOpenRuns: config.compaction.maxSessions,
      runName: ({ sessionHash: hash, replica }) => `cc-${hash.slice(0, 12)}-${replica}`,
      // A writer of its own beside the sidecar's span archive, so a log of its own (issue 29).
      log: writerLog({ ...config.archive.log, name: `${runtime.replica}-capture` }),
      onWarning: (w) => logger.warn({ warning: w }, 'capture side write failed; the span itself is sealed'),
    });
    // Its chain lines are checked within a second, like the compaction archive's (ADR 0120), not only by the full
    // verify every 10 minutes.
    seal.watch(this.archive);
  }

  /** After the last request: the log's last checkpoint, then the log released (issue 29). */
  async onApplicationShutdown(): Promise<void> {
    await this.archive.stop();
  }

  /** Writes the lines when they continue the archived transcript; else says where it ends. */
  capture(viewer: Viewer, req: CaptureRequest): Promise<CaptureAnswer> {
    const owned = viewer.kind === 'owner';
    // An owned capture is filed under a hash of the owner and the hook's session hash, so no one can post into a
    // session of someone else's by sending its hash; without an owner it is the hook's own hash, as on a laptop.
    const stored = owned ? sessionHash(`claude-code:${req.session_hash}`, viewer.owner) : req.session_hash;
    const ownerHash = owned ? viewer.ownerHash : null;
    const previous = this.queues.get(stored) ?? Promise.resolve();
    const next = previous.then(
      () => this.write(stored, ownerHash, req),
      () => this.write(stored, ownerHash, req),
    );
    this.queues.set(stored, next);
    void next.finally(() => {
      if (this.queues.get(stored) === next) this.queues.delete(stored);
    });
    return next;
  }

  private async write(stored: string, ownerHash: string | null, req: CaptureRequest): Promise<CaptureAnswer> {
    const spanDir = this.config.paths.spanDir;
    const end = await captureEnd(spanDir, await captureRuns(spanDir, stored, { ownerHash }));
    if (req.offset !== end) return { accepted: false, run: null, span: null, archived_end: end };
    const ref = await this.archive.write({
      kind: 'capture',
      sessionHash: stored,
      ownerHash: ownerHash ?? undefined,
      route: CAPTURE_ROUTE,
      model: req.model,
      messages: req.lines,
      // For capture spans first_index is the transcript byte offset of the first line (docs/ARCHIVE_FORMAT.md).
      firstIndex: req.offset,
      at: new Date(),
    });
    const bytes = req.lines.reduce<number>((sum, line) => sum + archivedLineBytes(line), 0);
    return { accepted: true, run: ref.run, span: ref.span, archived_end: req.offset + bytes };
  }
}
