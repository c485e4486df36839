/** A minute, as ms since the epoch at its start (UTC minutes: the console's buckets). */
export const MINUTE_MS = 60_000;
/** How far back the console's chart reads (`/guardian/history?minutes=` is at most 1440), and a minute to spare. */
export const HISTORY_KEEP_MS = (24 * 60 + 1) * MINUTE_MS;
/** The owner field of a compaction sent without a developer token. */
export const NO_OWNER = '-';

export function minuteOf(atMs: number): number {
  return Math.floor(atMs / MINUTE_MS) * MINUTE_MS;
}

/** Compactions per minute and owner, the last day of them, in this process (issue 31 item 1). */
export class MinuteHistory {
  private readonly minutes = new Map<number, Map<string, number>>();

  constructor(private readonly now: () => number) {}

  add(atMs: number, owner: string | undefined): void {
    const minute = minuteOf(atMs);
    const owners = this.minutes.get(minute) ?? new Map<string, number>();
    const key = owner ?? NO_OWNER;
    owners.set(key, (owners.get(key) ?? 0) + 1);
    this.minutes.set(minute, owners);
    // Bounded: a day of minutes at most (Map keeps insertion order, and minutes arrive in time order per process).
    const oldest = minuteOf(this.now() - HISTORY_KEEP_MS);
    for (const m of this.minutes.keys()) {
      if (m >= oldest) break;
      this.minutes.delete(m);
    }
  }

  /** Compactions per minute from `fromMs` to `toMs`: one owner's, or everyone's when `owner` is undefined. */
  read(fromMs: number, toMs: number, owner: string | undefined): Map<number, number> {
    const out = new Map<number, number>();
    for (const [minute, owners] of this.minutes) {
      if (minute < minuteOf(fromMs) || minute > toMs) continue;
      const n =
        owner === undefined ? [...owners.values()].reduce((a, b) => a + b, 0) : (owners.get(owner) ?? 0);
      if (n > 0) out.set(minute, n);
    }
    return out;
  }
}

/** Per minute, the larger of two counts of the same compactions (one store may have missed some: an outage). */
export function mergeHistory(a: Map<number, number>, b: Map<number, number>): Map<number, number> {
  const out = new Map(a);
  for (const [minute, n] of b) out.set(minute, Math.max(n, out.get(minute) ?? 0));
  return out;
}
