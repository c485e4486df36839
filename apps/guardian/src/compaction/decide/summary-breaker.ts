import { Injectable } from '@nestjs/common';

import { LruMap } from '@guardian/collections';

import { DecideReporter } from './decide-reporter';

/** Summary failures in a row, for one model, after which the summariser is left alone for a while. */
export const BREAKER_FAILURES = 3;
/**
 * How long the summariser stays unasked once the breaker opens, by how many times it has opened in a row: 1, 2, 4, 8,
 * 16, then 30 minutes. Meanwhile every stretch gets a checkpoint written without a model (issue 20, ADR 0007).
 */
export const BREAKER_SCHEDULE_MS = [60_000, 120_000, 240_000, 480_000, 960_000, 1_800_000] as const;
/** Models the breaker remembers (client-chosen names: bounded like every table keyed by them). */
const MAX_MODELS = 256;

interface Circuit {
  /** Failures in a row while closed. */
  failures: number;
  /** Times it opened in a row (reset by a success): the step of the schedule. */
  opened: number;
  /** Epoch ms until which the summariser is not asked; 0 when closed. */
  openUntil: number;
}

/**
 * A circuit breaker on the summariser, per model (the upstream is one per process). A backend whose model cannot
 * summarise (too short, errors, timeouts) was asked twice on every turn past the budget, and the turn still failed
 * open; after BREAKER_FAILURES failures in a row it is not asked until the schedule says so, then once (half open):
 * a good summary closes the breaker, a failure opens it for the next step of the schedule.
 */
@Injectable()
export class SummaryBreaker {
  /** Least recently touched (by a failure) first out; `allows` peeks, so asking does not keep a model. */
  private readonly circuits = new LruMap<string, Circuit>(MAX_MODELS);

  constructor(private readonly reporter: DecideReporter) {}

  /** True when the summariser may be asked for this model now (closed, or open past its time: half open). */
  allows(model: string, now = Date.now()): boolean {
    const c = this.circuits.peek(model);
    return !c || c.openUntil <= now;
  }

  success(model: string): void {
    if (this.circuits.delete(model)) this.publish();
  }

  failure(model: string, now = Date.now()): void {
    const c = this.circuits.peek(model) ?? { failures: 0, opened: 0, openUntil: 0 };
    const halfOpen = c.openUntil > 0;
    c.failures += 1;
    if (halfOpen || c.failures >= BREAKER_FAILURES) {
      const step = Math.min(c.opened, BREAKER_SCHEDULE_MS.length - 1);
      c.openUntil = now + BREAKER_SCHEDULE_MS[step]!;
      c.opened += 1;
      this.reporter.circuitOpened();
    }
    this.circuits.set(model, c); // set last: the newest, and the oldest past MAX_MODELS is dropped
    this.publish();
  }

  /** The newest circuits into /guardian/stats (it words them at read time) and the open ones into a gauge. */
  private publish(now = Date.now()): void {
    this.reporter.circuits(
      [...this.circuits.entries()].slice(-16),
      this.circuits.newestFirst().filter((c) => c.openUntil > now).length,
    );
  }
}
