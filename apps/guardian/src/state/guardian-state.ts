import { EventEmitter } from 'node:events';

import { Injectable } from '@nestjs/common';

import type { FailOpenStage } from '@guardian/telemetry';

export type EventKind =
  | 'compaction'
  | 'summary_chunked'
  | 'oversized_spill'
  | 'fail_open'
  | 'overflow_recovered'
  | 'archive_deferred';

/** One entry of `/guardian/events`: counts and names only, never message text (CONTRACTS §5). */
export interface GuardianEvent {
  kind: EventKind;
  at: string;
  route: string;
  model?: string;
  session?: string;
  [key: string]: string | number | boolean | null | undefined;
}

export type { FailOpenStage } from '@guardian/telemetry';

export interface WindowInfo {
  window: number;
  source: string;
}

/**
 * What `/guardian/stats` and the dashboard report: process-wide counters and the recent events.
 * Plain fields, updated on the request path without allocation beyond the event itself.
 */
@Injectable()
export class GuardianState {
  static readonly MAX_EVENTS = 200;
  readonly startedAt = new Date().toISOString();
  readonly events: GuardianEvent[] = [];
  readonly live = new EventEmitter();
  readonly windows = new Map<string, WindowInfo>();
  lastModel: string | undefined;

  compactionsPerformed = 0;
  summariesReused = 0;
  summariesChunked = 0;
  summaryRetries = 0;
  /** Overflow recoveries that forwarded a checkpoint because the summariser failed (ADR 0007). */
  summaryCheckpoints = 0;
  summariserCalls = 0;
  oversizedSpills = 0;
  compactionsWithPins = 0;
  lastPinsCarried = 0;
  archiveDeferred = 0;
  overflowRecovered = 0;
  tokensKeptOut = 0;
  passthroughUnparsed = 0;
  passthroughStateful = 0;
  /** Background pre-compaction (issue 14): summaries stored, reused by a client request, failed, running now. */
  readonly precompact = { done: 0, used: 0, failed: 0, running: 0 };
  /** Compacted client requests that waited on a summariser call, and for how long in all. */
  summaryWaits = 0;
  summaryWaitSeconds = 0;
  /** The summariser's circuit breaker per model (compaction/summary-breaker.ts): newest 16. */
  readonly summariserCircuits = new Map<string, { failures: number; opened: number; openUntil: number }>();
  readonly failOpen: Record<FailOpenStage, number> = {
    parse: 0,
    count: 0,
    window: 0,
    plan: 0,
    memo: 0,
    summarise: 0,
    archive: 0,
    rebuild: 0,
    recovery: 0,
    internal: 0,
  };
  upstreamStatus: 'ok' | 'down' | 'unknown' = 'unknown';
  /** Set by the seal monitor (observability/seal-monitor.ts): `unknown` until the first archive verify ends. */
  sealStatus: 'ok' | 'broken' | 'unknown' = 'unknown';
  sealCheckedAt: string | null = null;

  constructor() {
    this.live.setMaxListeners(100);
  }

  emit(event: Omit<GuardianEvent, 'at'> & { at?: string }): void {
    const e = { ...event, at: event.at ?? new Date().toISOString() } as GuardianEvent;
    this.events.push(e);
    if (this.events.length > GuardianState.MAX_EVENTS) this.events.shift();
    this.live.emit('event', e);
  }
}
