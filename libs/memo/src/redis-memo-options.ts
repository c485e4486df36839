import { z } from 'zod';
import type { InMemoryMemoStore } from './in-memory-memo-store';
import type { MemoLogger } from './redis-connection';

/** Options of the Redis memo (GUARDIAN_REDIS_URL, _PREFIX, _TIMEOUT_MS, GUARDIAN_MEMO_TTL). */
export interface RedisMemoStoreOptions {
  /** `redis://[:password@]host:port[/db]` or `rediss://...` (TLS). */
  url: string;
  /** Key prefix, default `guardian:`. */
  prefix?: string;
  /** TTL of every key, seconds. */
  ttlSeconds: number;
  /** Bound on each Redis command, ms (not on waitFor, ARCHITECTURE.md#fail-open rule 4). */
  commandTimeoutMs: number;
  /** Bound on the start-up connect attempt, ms (default 2000). */
  connectTimeoutMs?: number;
  /** Entries larger than this (JSON bytes) stay in the local memo only (default 256 KiB). */
  maxEntryBytes?: number;
  /** The local memo: written on every put, answers while Redis is away. */
  fallback: InMemoryMemoStore;
  /** Called once per failed operation (the sidecar counts guardian_memo_errors_total). */
  onError?: (op: string, err: Error) => void;
  logger?: MemoLogger;
}

/** Validates the plain-value options once, at construction (HOUSE rule 2). */
export const redisMemoOptionsSchema = z.object({
  url: z.string().regex(/^rediss?:\/\//, 'must start with redis:// or rediss://'),
  prefix: z.string().min(1).max(64).default('guardian:'),
  ttlSeconds: z.number().int().positive(),
  commandTimeoutMs: z.number().int().positive(),
  connectTimeoutMs: z.number().int().positive().default(2000),
  maxEntryBytes: z
    .number()
    .int()
    .positive()
    .default(256 * 1024),
});
