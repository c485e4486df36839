export {
  InMemoryMemoStore,
  MAX_CUTS_PER_SESSION,
  type InMemoryMemoStoreOptions,
} from './in-memory-memo-store';
export { MemoError, type MemoErrorCode } from './memo-error';
export { MemoStore, type MemoEntry, type MemoLock, type UsageRecord } from './memo-store';
export {
  describeTarget,
  type MemoLogger,
  type RedisConnectResult,
  type RedisMemoStatus,
} from './redis-connection';
export { type RedisMemoStoreOptions } from './redis-memo-options';
export { RedisMemoStore } from './redis-memo-store';
