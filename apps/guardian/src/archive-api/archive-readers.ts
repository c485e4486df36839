import { Injectable } from '@nestjs/common';

import { LocalArchive, LogProofs, Receipts } from '@guardian/archive';

import type { Viewer } from '../access/access-policy';
import { GuardianConfig } from '../config/guardian-config';
import { GuardianRuntime } from '../config/guardian-runtime';
import { SealMonitor } from '../archive-verifier/seal-monitor';
import { FailOpen } from '../observability/fail-open';
import { LIMITS } from './archive-query';
import { LogFiles } from './log-files';

/**
 * Opens the span volume for one caller: the library's own {@link LocalArchive}, scoped to the caller's owner (the admin
 * and an open sidecar see every run), bounded in search time, and leaving the same counts-only receipts a local
 * recall leaves, with the owner on them.
 */
@Injectable()
export class ArchiveReaders {
  /** One per process: the log entries it has read stay valid while the logs grow (issue 29). */
  private readonly logProofs: LogProofs;
  readonly logs: LogFiles;

  constructor(
    private readonly config: GuardianConfig,
    private readonly receipts: Receipts,
    private readonly seal: SealMonitor,
    private readonly failOpen: FailOpen,
    runtime: GuardianRuntime,
  ) {
    this.logProofs = new LogProofs(config.paths.spanDir);
    // The sidecar's span writer logs under the replica tag (app.module.ts).
    this.logs = new LogFiles(config.paths.spanDir, runtime.replica);
  }

  forViewer(viewer: Viewer): LocalArchive {
    const paths = this.config.paths;
    return new LocalArchive({
      spanDir: paths.spanDir,
      anchorDir: paths.anchorDir,
      logDir: paths.logDir,
      usageDir: paths.usageDir,
      receiptsDir: paths.receiptsDir,
      scope: viewer.kind === 'owner' ? { ownerHash: viewer.ownerHash } : undefined,
      sessionOwner: viewer.kind === 'owner' ? viewer.owner : undefined,
      receipts: this.receipts,
      searchTimeoutMs: LIMITS.searchMs,
      // Receipts report runs_broken from the background seal check, not a verify of every run per call.
      sealKnowledge: this.seal,
      onReceiptError: (err) => this.failOpen.report('archive', 'receipt_write', { route: 'other', err }),
      logProofs: this.logProofs,
    });
  }
}
