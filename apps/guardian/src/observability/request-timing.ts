import { AsyncLocalStorage } from 'node:async_hooks';

/** Time one client request spent waiting on the upstream for guardian's own calls (window, /tokenize, summaries). */
export interface RequestTiming {
  upstreamWaitMs: number;
}

/**
 * Request context for timing (HOUSE rule 7: request context travels in AsyncLocalStorage). The proxy opens it
 * around the compaction step; the upstream client adds each call's wait to it, so the overhead metric
 * (`guardian_overhead_duration_seconds`, like LiteLLM's) is guardian's own time only.
 */
export const requestTiming = new AsyncLocalStorage<RequestTiming>();

export function recordUpstreamWait(ms: number): void {
  const t = requestTiming.getStore();
  if (t) t.upstreamWaitMs += ms;
}
