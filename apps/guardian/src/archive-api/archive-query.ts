import { z } from 'zod';

import { ArchiveError } from '@guardian/archive';
import { ARCHIVE_API_LIMITS } from '@guardian/client';

/** The recall API's bounds, shared with the tools that read through it (libs/client). */
const LIMITS = ARCHIVE_API_LIMITS;
export { LIMITS };

const count = (bounds: { default: number; max: number }, min = 1) =>
  z.coerce.number().int().min(min).max(bounds.max).default(bounds.default);
const cursor = z.string().min(1).max(80).optional();
const index = z.coerce.number().int().min(0).optional();

export const RunsQuery = z.object({ after: cursor, limit: count(LIMITS.runs) });
export const SpansQuery = z.object({ after: index, limit: count(LIMITS.spans) });
export const ReadQuery = z.object({
  start: index,
  end: index,
  max_chars: count(LIMITS.readChars, 100),
});
export const DigestsQuery = z.object({
  run: cursor,
  max: count(LIMITS.digests),
  max_tokens: count(LIMITS.digestTokens, 40),
});
export const SearchQuery = z.object({
  term: z.string().min(1).max(1000),
  run: cursor,
  session: z.string().min(1).max(256).optional(),
  max: count(LIMITS.searchHits),
});
export const SealQuery = z.object({ run: cursor, after: cursor, limit: count(LIMITS.seal) });
export const SinceQuery = z.object({ since: z.string().min(1).max(16).default('7d') });

/**
 * Validates a query string against its schema; a bad value is a 400 with the stable code ARCHIVE_BAD_OPTION naming
 * the parameter (a repeated parameter arrives as an array and is refused the same way).
 */
export function parseQuery<S extends z.ZodType>(schema: S, query: unknown): z.infer<S> {
  const parsed = schema.safeParse(query ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const name = issue?.path.join('.') || 'query';
  throw new ArchiveError('ARCHIVE_BAD_OPTION', `${name}: ${issue?.message ?? 'invalid'}`);
}
