import { Injectable } from '@nestjs/common';

import {
  GuardianMetrics,
  type NativeEntry,
  type NativeHandleOutcome,
  type NativeOutcome,
  type NativeRoute,
} from '@guardian/telemetry';

import type { GuardianError } from '../../http/http-error';
import { GuardianState } from '../../state/guardian-state';

/** What an event says of the request: the session's first 8 hex and its owner hash (team mode filters on it). */
export interface NativeSaid {
  model?: string;
  session?: string;
  owner_hash?: string | null;
  [count: string]: string | number | boolean | null | undefined;
}

/**
 * Counts and tells what the compaction protocols did (docs/native-compaction.md, "Metrics and events"): every entry
 * point and every handle sent back is counted; an event is kept for what changed or was refused, not for the no-op
 * edits Claude Code sends on every request nor for each turn that resends a handle the memo still holds.
 */
@Injectable()
export class NativeReporter {
  constructor(
    private readonly metrics: GuardianMetrics,
    private readonly state: GuardianState,
  ) {}

  entry(entry: NativeEntry, outcome: NativeOutcome, route: NativeRoute, said: NativeSaid = {}): void {
    this.metrics.nativeRequests.inc({ entry, outcome });
    if (outcome !== 'not_needed')
      this.state.emit({ kind: 'native_compaction', route, ...said, entry, outcome });
  }

  /** A handle refused (GUARDIAN_COMPACTION_HANDLE_INVALID or _FOREIGN), counted by which. */
  handleRefused(route: NativeRoute, err: GuardianError, owner: string | undefined): void {
    const outcome = err.code === 'GUARDIAN_COMPACTION_HANDLE_FOREIGN' ? 'foreign' : 'invalid';
    this.handle(route, outcome, { owner_hash: owner ?? null, code: err.code });
  }

  handle(route: NativeRoute, outcome: NativeHandleOutcome, said: NativeSaid = {}): void {
    this.metrics.nativeHandles.inc({ route, outcome });
    if (outcome !== 'memo' && outcome !== 'block')
      this.state.emit({ kind: 'native_handle', route, ...said, outcome });
  }
}
