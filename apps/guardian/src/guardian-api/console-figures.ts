import { z } from 'zod';

import {
  addUsageRow,
  emptyUsageTotals,
  spendUsd,
  type TokenPrices,
  type UsageLogRow,
} from '@guardian/archive';
import type { HistoryBucket, SessionCompaction, UsageFigures, UsageModelFigures } from '@guardian/client';

/**
 * The compaction log fields the console reads (libs/archive `CompactionLogLine`, ARCHITECTURE.md#files); other
 * fields are ignored, and a line that does not match is skipped like `recall --savings` skips it.
 */
export const ConsoleLogLine = z.looseObject({
  ts: z.string(),
  session_hash: z.string(),
  owner_hash: z.string().nullish(),
  model: z.string().default(''),
  run: z.string().nullish(),
  span: z.number().nullish(),
  tokens_before: z.number(),
  tokens_after: z.number(),
  evicted_messages: z.number().default(0),
  summariser_calls: z.number().default(0),
  pins: z.number().default(0),
  dry_run: z.boolean().default(false),
});
export type ConsoleLogRow = z.infer<typeof ConsoleLogLine>;

/** The one rule of what counts (libs/archive `savingsSummary`): a dry run saved nothing; a compaction evicted something. */
function counted(row: ConsoleLogRow): boolean {
  return !row.dry_run;
}
function isCompaction(row: ConsoleLogRow): boolean {
  return row.evicted_messages > 0;
}

const MINUTE_MS = 60_000;

/**
 * Compactions per UTC minute from `from` to `to`, only the minutes that had one (the page fills the rest). `memoCounts`
 * is the memo's per-minute count (ADR 0027: in the process, and every replica's in Redis when configured); per minute
 * the larger of the two counts stands, since each may miss some (a log that could not be written, a Redis outage, a
 * replica on another volume) and neither counts one compaction twice.
 */
export function minuteHistory(
  rows: readonly ConsoleLogRow[],
  from: Date,
  to: Date,
  memoCounts: ReadonlyMap<number, number> = new Map(),
): HistoryBucket[] {
  const byMinute = new Map<number, number>();
  for (const row of rows) {
    const t = Date.parse(row.ts);
    if (!counted(row) || !isCompaction(row) || t < from.getTime() || t > to.getTime()) continue;
    const minute = Math.floor(t / MINUTE_MS) * MINUTE_MS;
    byMinute.set(minute, (byMinute.get(minute) ?? 0) + 1);
  }
  // A minute that began before `from` is the log's alone: the memo counts whole minutes, the window starts inside one.
  for (const [minute, n] of memoCounts) {
    if (minute < from.getTime() || minute > to.getTime()) continue;
    byMinute.set(minute, Math.max(n, byMinute.get(minute) ?? 0));
  }
  return [...byMinute.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([minute, compactions]) => ({ at: new Date(minute).toISOString(), compactions }));
}

/** What the log says of one session: its compactions, tokens and summariser calls, its last pins. */
export interface SessionLogFigures {
  compactions: number;
  tokens_before: number;
  tokens_after: number;
  summariser_calls: number;
  pins: number;
  last_compaction_at: string | null;
  /** Of the session's newest line: its owner hash, model, and the run its span went to (its run.json has the name). */
  owner_hash: string | null;
  model: string;
  run: string | null;
  /** `ts` of that line, so the newest wins across replicas' files. */
  latest_at: string;
}

/** Per session hash, in log order (the log is appended in time order per replica; the newest `ts` wins). */
export function sessionFigures(rows: readonly ConsoleLogRow[]): Map<string, SessionLogFigures> {
  const out = new Map<string, SessionLogFigures>();
  for (const row of rows) {
    if (!counted(row)) continue;
    const f = out.get(row.session_hash) ?? {
      compactions: 0,
      tokens_before: 0,
      tokens_after: 0,
      summariser_calls: 0,
      pins: 0,
      last_compaction_at: null,
      owner_hash: row.owner_hash ?? null,
      model: row.model,
      run: row.run ?? null,
      latest_at: row.ts,
    };
    if (row.ts >= f.latest_at) {
      f.latest_at = row.ts;
      f.owner_hash = row.owner_hash ?? null;
      f.model = row.model;
      f.run = row.run ?? f.run;
    }
    f.tokens_before += row.tokens_before;
    f.tokens_after += row.tokens_after;
    f.summariser_calls += row.summariser_calls;
    if (isCompaction(row)) {
      f.compactions += 1;
      if (f.last_compaction_at === null || row.ts >= f.last_compaction_at) {
        f.last_compaction_at = row.ts;
        f.pins = row.pins;
      }
    }
    out.set(row.session_hash, f);
  }
  return out;
}

/** One session's compactions, newest first, at most `max`. */
export function sessionCompactions(
  rows: readonly ConsoleLogRow[],
  session: string,
  max: number,
): SessionCompaction[] {
  return rows
    .filter((r) => r.session_hash === session && counted(r))
    .sort((a, b) => (a.ts < b.ts ? 1 : a.ts > b.ts ? -1 : 0))
    .slice(0, max)
    .map((r) => ({
      at: r.ts,
      model: r.model,
      tokens_before: r.tokens_before,
      tokens_after: r.tokens_after,
      evicted_messages: r.evicted_messages,
      summariser_calls: r.summariser_calls,
      pins: r.pins,
      run: r.run ?? null,
      span: r.span ?? null,
    }));
}

function emptyFigures(): UsageFigures {
  return {
    requests: 0,
    compactions: 0,
    tokens_before: 0,
    tokens_after: 0,
    tokens_kept_out: 0,
    summariser_calls: 0,
    cost_kept_out_usd: 0,
    ...emptyUsageTotals(),
    cost_usd: 0,
  };
}

function add(f: UsageFigures, row: ConsoleLogRow): void {
  f.requests += 1;
  if (isCompaction(row)) f.compactions += 1;
  f.tokens_before += row.tokens_before;
  f.tokens_after += row.tokens_after;
  f.summariser_calls += row.summariser_calls;
}

/**
 * Kept out is the difference of the sums, as `recall --savings` computes it, so the two agree to the token; the spend
 * is priced by the rule --savings prices by (libs/archive spendUsd).
 */
function settle(f: UsageFigures, prices: TokenPrices): void {
  f.tokens_kept_out = Math.max(0, f.tokens_before - f.tokens_after);
  f.cost_kept_out_usd = Math.round((f.tokens_kept_out / 1_000_000) * prices.inputPer1M * 10_000) / 10_000;
  f.cost_usd = spendUsd(f, prices);
}

/** One developer's (an owner hash, or null for requests sent without a token) figures, in all and per model. */
export interface OwnerFigures {
  ownerHash: string | null;
  totals: UsageFigures;
  models: UsageModelFigures[];
}

/**
 * Usage since `since` per owner and model, with the total of all, from the compaction log's rows (what guardian
 * compacted) and the usage log's (what the backend answered and summaries cost); both already scoped to the viewer.
 */
export function usageFigures(
  rows: readonly ConsoleLogRow[],
  usage: readonly UsageLogRow[],
  since: Date,
  prices: TokenPrices,
): { total: UsageFigures; owners: OwnerFigures[] } {
  const total = emptyFigures();
  const owners = new Map<string | null, { totals: UsageFigures; models: Map<string, UsageFigures> }>();
  const figuresOf = (ownerKey: string | null, modelName: string): UsageFigures[] => {
    const owner = owners.get(ownerKey) ?? { totals: emptyFigures(), models: new Map<string, UsageFigures>() };
    const model = owner.models.get(modelName) ?? emptyFigures();
    owner.models.set(modelName, model);
    owners.set(ownerKey, owner);
    return [total, owner.totals, model];
  };
  for (const row of rows) {
    if (!counted(row) || Date.parse(row.ts) < since.getTime()) continue;
    for (const f of figuresOf(row.owner_hash ?? null, row.model)) add(f, row);
  }
  for (const row of usage) {
    if (Date.parse(row.ts) < since.getTime()) continue;
    for (const f of figuresOf(row.owner_hash ?? null, row.model)) addUsageRow(f, row);
  }
  settle(total, prices);
  return {
    total,
    owners: [...owners.entries()].map(([ownerHash, o]) => {
      settle(o.totals, prices);
      const models = [...o.models.entries()]
        .map(([model, f]) => {
          settle(f, prices);
          return { model, ...f };
        })
        .sort((a, b) => b.tokens_before - a.tokens_before || b.tokens_in - a.tokens_in);
      return { ownerHash, totals: o.totals, models };
    }),
  };
}
