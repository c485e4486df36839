import { z } from 'zod';
import { MemoError } from './memo-error';
import type { MemoEntry, UsageRecord } from './memo-store';

// What another replica (or an older version) wrote to Redis is untrusted input: it is validated before use
// (HOUSE rule 2), and a record that does not parse is treated as a miss.
const memoEntrySchema = z.object({
  summary: z.string(),
  mustKeep: z.array(z.string()),
  anchors: z.array(z.string()).optional(),
  ledger: z.array(z.string()).optional(),
  cut: z.number().int().nonnegative(),
  from: z.number().int().nonnegative().optional(),
  prefixHash: z.string(),
  span: z.string().optional(),
  pendingFrom: z.number().int().nonnegative().optional(),
  spans: z.array(z.string()),
  spanTotal: z.number().int().nonnegative().optional(),
  precomputed: z.boolean().optional(),
  asked: z.string().optional(),
  checkpoint: z.boolean().optional(),
  summaryTokens: z.number().nonnegative(),
  createdAt: z.string(),
});

const usageRecordSchema = z.object({
  session: z.string(),
  window: z.number(),
  used_after_compaction: z.number(),
  pct: z.number(),
  count_source: z.enum(['tokenize', 'tokenize+estimate', 'calibrated', 'estimate']),
  model: z.string(),
  last_compaction_at: z.string().nullable(),
  at: z.string(),
  tools: z.number().int().nonnegative().optional(),
  owner: z.string().optional(),
  name: z.string().max(256).optional(),
  turns: z.number().int().nonnegative().optional(),
  session_source: z.string().optional(),
});

// A field added to MemoEntry or UsageRecord but not to its schema would be silently dropped on the way
// through Redis; these lines stop the build instead.
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Same<A, B> = Mutual<A, B> extends true ? Mutual<keyof A, keyof B> : false;
const entrySchemaMatches: Same<z.infer<typeof memoEntrySchema>, MemoEntry> = true;
const usageSchemaMatches: Same<z.infer<typeof usageRecordSchema>, UsageRecord> = true;
void [entrySchemaMatches, usageSchemaMatches];

function decode<T>(schema: z.ZodType<T>, raw: string, what: string): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new MemoError('MEMO_ENTRY_INVALID', `stored ${what} is not JSON`, { cause: err });
  }
  const result = schema.safeParse(parsed);
  if (!result.success) {
    throw new MemoError('MEMO_ENTRY_INVALID', `stored ${what} has the wrong shape`, { cause: result.error });
  }
  return result.data;
}

/** Parse a stored memo entry; throws MEMO_ENTRY_INVALID. */
export function decodeEntry(raw: string): MemoEntry {
  const entry = decode(memoEntrySchema, raw, 'memo entry');
  // Optional fields stay absent rather than undefined, so an entry round-trips exactly.
  if (entry.span === undefined) delete entry.span;
  if (entry.ledger === undefined) delete entry.ledger;
  if (entry.from === undefined) delete entry.from;
  if (entry.pendingFrom === undefined) delete entry.pendingFrom;
  if (entry.spanTotal === undefined) delete entry.spanTotal;
  if (entry.precomputed === undefined) delete entry.precomputed;
  if (entry.asked === undefined) delete entry.asked;
  if (entry.checkpoint === undefined) delete entry.checkpoint;
  return entry;
}

/** Parse a stored usage record; throws MEMO_ENTRY_INVALID. */
export function decodeUsage(raw: string): UsageRecord {
  return decode(usageRecordSchema, raw, 'usage record');
}

/** Milliseconds since the epoch of a record's `at`, 0 when it does not parse (it then sorts last). */
export function usageTime(record: UsageRecord): number {
  const ms = Date.parse(record.at);
  return Number.isNaN(ms) ? 0 : ms;
}

/** The more recent of two usage records (by `at`); the first wins a tie. */
export function newerUsage(a: UsageRecord | undefined, b: UsageRecord | undefined): UsageRecord | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return usageTime(b) > usageTime(a) ? b : a;
}
