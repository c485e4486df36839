import { Injectable } from '@nestjs/common';

import type { EventsAnswer } from '@guardian/client';
import { LruMap } from '@guardian/collections';

/** The event kinds, as the client's type names them: one list for the server and its readers. */
export type EventKind = EventsAnswer['events'][number]['kind'];

/** One entry of `/guardian/events`: counts and names only, never message text (ARCHITECTURE.md#http-surface). */
export interface GuardianEvent {
  kind: EventKind;
  at: string;
  route: string;
  model?: string;
  session?: string;
  [key: string]: string | number | boolean | null | undefined;
}

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
  /** Models whose window is remembered; a deployment serves a handful, a client cycling names must not grow this. */
  static readonly MAX_MODELS = 256;
  /** Longest string an event keeps (a model name is the client's to choose, and events are held in memory). */
  static readonly MAX_EVENT_STRING = 256;
  readonly startedAt = new Date().toISOString();
  readonly events: GuardianEvent[] = [];
  /** Live listeners (dashboard streams): a plain Set, since one per open dashboard may be many more than
   * EventEmitter's leak warning allows (issue 12 defect 8). */
  private readonly listeners = new Set<(e: GuardianEvent) => void>();
  /** Windows per model, least recently used first out past {@link GuardianState.MAX_MODELS} (issue 12 defect 6). */
  readonly windows = new LruMap<string, WindowInfo>(GuardianState.MAX_MODELS);
  /** Goes up whenever a window is remembered or forgotten (not when one is only read). */
  windowsVersion = 0;
  lastModel: string | undefined;

  // Counts that have a Prometheus series (compactions, reuses, fail-opens, ...) are kept there only, and
  // /guardian/stats reads them from the registry (guardian-api/stats.ts). What is kept here has no metric. Each is
  // written only by the methods below, which the stages' reporters call: nothing else assigns to them.
  #summaryCheckpoints = 0;
  #tokensKeptOut = 0;
  #passthroughBySize = 0;
  #precompactRunning = 0;
  #behind = 0;
  #summaryWaits = 0;
  #summaryWaitSeconds = 0;
  #upstreamStatus: 'ok' | 'down' | 'unknown' = 'unknown';
  #sealStatus: 'ok' | 'broken' | 'unknown' = 'unknown';
  #sealCheckedAt: string | null = null;
  /** The summariser's circuit breaker per model (compaction/decide/summary-breaker.ts): newest 16. */
  readonly summariserCircuits = new Map<string, { failures: number; opened: number; openUntil: number }>();

  /** Stretches whose summary failed and a checkpoint stood in (ADR 0007). */
  get summaryCheckpoints(): number {
    return this.#summaryCheckpoints;
  }
  get tokensKeptOut(): number {
    return this.#tokensKeptOut;
  }
  /** Forwarded on the size proof alone, never parsed (ADR 0013). */
  get passthroughBySize(): number {
    return this.#passthroughBySize;
  }
  /**
   * Writes still running behind answers already sent: span commits, compaction-log, receipt and usage lines, hand-off
   * files, journal appends. 0 once everything the answers so far left behind is on the volume (what a test waits for
   * before it reads the archive, instead of a pause: issue 30 item 9).
   */
  get behind(): number {
    return this.#behind;
  }
  /** Counts `work` as running behind an answer until it settles (either way: its own failure is reported by it). */
  trackBehind(work: Promise<unknown>): void {
    this.#behind += 1;
    const done = (): void => {
      this.#behind -= 1;
    };
    work.then(done, done);
  }
  /** Background pre-compactions running now (issue 14); the outcomes are guardian_precompact_total. */
  get precompactRunning(): number {
    return this.#precompactRunning;
  }
  /** Compacted client requests that waited on a summariser call, and for how long in all. */
  get summaryWaits(): number {
    return this.#summaryWaits;
  }
  get summaryWaitSeconds(): number {
    return this.#summaryWaitSeconds;
  }
  get upstreamStatus(): 'ok' | 'down' | 'unknown' {
    return this.#upstreamStatus;
  }
  /** Set by the seal monitor (archive-verifier/seal-monitor.ts): `unknown` until the first archive verify ends. */
  get sealStatus(): 'ok' | 'broken' | 'unknown' {
    return this.#sealStatus;
  }
  get sealCheckedAt(): string | null {
    return this.#sealCheckedAt;
  }

  countSummaryCheckpoint(): void {
    this.#summaryCheckpoints += 1;
  }
  addTokensKeptOut(tokens: number): void {
    this.#tokensKeptOut += Math.max(0, tokens);
  }
  countPassthroughBySize(): void {
    this.#passthroughBySize += 1;
  }
  setPrecompactRunning(jobs: number): void {
    this.#precompactRunning = jobs;
  }
  countSummaryWait(seconds: number): void {
    this.#summaryWaits += 1;
    this.#summaryWaitSeconds += seconds;
  }
  setUpstreamStatus(status: 'ok' | 'down'): void {
    this.#upstreamStatus = status;
  }
  setSeal(status: 'ok' | 'broken' | 'unknown', checkedAt: string): void {
    this.#sealStatus = status;
    this.#sealCheckedAt = checkedAt;
  }

  /** The model's window, marked as just used. */
  windowOf(model: string): WindowInfo | undefined {
    return this.windows.get(model);
  }

  /** Remembers a model's window, forgetting the least recently used model beyond MAX_MODELS. */
  rememberWindow(model: string, info: WindowInfo): void {
    this.windowsVersion += 1;
    this.windows.set(model, info);
    this.lastModel = model;
  }

  emit(event: Omit<GuardianEvent, 'at'> & { at?: string }): void {
    const e = { ...event, at: event.at ?? new Date().toISOString() } as GuardianEvent;
    for (const [key, value] of Object.entries(e))
      if (typeof value === 'string' && value.length > GuardianState.MAX_EVENT_STRING)
        e[key] = `${value.slice(0, GuardianState.MAX_EVENT_STRING)}…`;
    this.events.push(e);
    if (this.events.length > GuardianState.MAX_EVENTS) this.events.shift();
    for (const listener of this.listeners) listener(e);
  }

  /** Calls `listener` with every event from now on; returns the function that stops it. */
  subscribe(listener: (e: GuardianEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
