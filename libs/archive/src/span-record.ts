import { z } from 'zod';

import type { SpanInput, SpanKind } from './archive-writer';

const SPAN_FORMAT = 1;

/** A span file's JSON (docs/ARCHIVE_FORMAT.md §"Span files"). */
export interface SpanRecord {
  format: number;
  kind: SpanKind;
  run: string;
  span: number;
  session_hash: string;
  owner_hash: string | null;
  route: string;
  model: string;
  created_at: string;
  first_index: number;
  message_count: number;
  messages: unknown[];
  summary: string | null;
  continues: string | null;
  oversized: boolean;
  original_tokens: number | null;
  tokens_before: number | null;
  tokens_after: number | null;
}

export function buildSpanRecord(run: string, span: number, input: SpanInput): SpanRecord {
  return {
    format: SPAN_FORMAT,
    kind: input.kind,
    run,
    span,
    session_hash: input.sessionHash,
    owner_hash: input.ownerHash ?? null,
    route: input.route,
    model: input.model,
    created_at: input.at.toISOString(),
    first_index: input.firstIndex,
    message_count: input.messages.length,
    messages: input.messages,
    summary: input.summary ?? null,
    continues: input.continues ?? null,
    oversized: input.kind === 'oversized',
    original_tokens: input.originalTokens ?? null,
    tokens_before: input.tokensBefore ?? null,
    tokens_after: input.tokensAfter ?? null,
  };
}

/**
 * What the reading side needs from a span file. Lenient on purpose: spans written by older versions (the
 * seed's format, sealed later by --seal-existing) lack most fields but always hold `messages`.
 */
export const StoredSpanSchema = z.looseObject({
  messages: z.array(z.unknown()),
  kind: z.string().optional(),
  summary: z.string().nullish(),
  created_at: z.string().optional(),
  session_hash: z.string().optional(),
  first_index: z.number().optional(),
});
export type StoredSpan = z.infer<typeof StoredSpanSchema>;

export const RunInfoSchema = z.looseObject({
  run: z.string(),
  session_hash: z.string(),
  owner_hash: z.string().nullable(),
  replica: z.string(),
  started_at: z.string(),
  // A name that is not a string is no name: it never makes the run's owner unreadable.
  session_name: z.string().optional().catch(undefined),
});

/** A session name longer than a session header may be (ARCHITECTURE.md#sessions) is neither written nor read. */
const MAX_SESSION_NAME_BYTES = 256;

/** The name as run.json keeps it: 1-256 bytes of UTF-8, else none. */
export function boundedSessionName(name: string | undefined): string | undefined {
  if (name === undefined || name === '' || Buffer.byteLength(name, 'utf8') > MAX_SESSION_NAME_BYTES)
    return undefined;
  return name;
}
export type RunFile = z.infer<typeof RunInfoSchema>;

/** One line of a capture journal segment. */
export const JournalLineSchema = z.looseObject({
  n: z.number(),
  at: z.string(),
  message: z.unknown(),
});
