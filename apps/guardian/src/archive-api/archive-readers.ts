import { Injectable } from '@nestjs/common';

import { LocalArchive, Receipts } from '@guardian/archive';

import type { Viewer } from '../access/access-policy';
import { GuardianConfig } from '../config/guardian-config';
import { SealMonitor } from '../archive-verifier/seal-monitor';
import { FailOpen } from '../observability/fail-open';
import { LIMITS } from './archive-query';

/**
 * Opens the span volume for one caller: the library's own {@link LocalArchive}, scoped to the caller's owner (the admin
 * and an open sidecar see every run), bounded in search time, and leaving the same counts-only receipts a local
 * recall leaves, with the owner on them.
 */
@Injectable()
export class ArchiveReaders {
  constructor(
    private readonly config: GuardianConfig,
    private readonly receipts: Receipts,
    private readonly seal: SealMonitor,
    private readonly failOpen: FailOpen,
  ) {}

  forViewer(viewer: Viewer): LocalArchive {
    const paths = this.config.paths;
    return new LocalArchive({
      spanDir: paths.spanDir,
      anchorDir: paths.anchorDir,
      logDir: paths.logDir,
      receiptsDir: paths.receiptsDir,
      scope: viewer.kind === 'owner' ? { ownerHash: viewer.ownerHash } : undefined,
      sessionOwner: viewer.kind === 'owner' ? viewer.owner : undefined,
      receipts: this.receipts,
      searchTimeoutMs: LIMITS.searchMs,
      // Receipts report runs_broken from the background seal check, not a verify of every run per call.
      sealKnowledge: this.seal,
      onReceiptError: (err) => this.failOpen.report('archive', 'receipt_write', { route: 'other', err }),
    });
  }
}
