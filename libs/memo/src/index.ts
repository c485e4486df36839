export { InMemoryMemoStore } from './in-memory-memo-store';
export { MemoStore, type MemoEntry, type UsageRecord } from './memo-store';
export { RedisMemoStore } from './redis-memo-store';
