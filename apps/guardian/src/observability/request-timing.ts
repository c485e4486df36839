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

let inFlight = 0;

/**
 * Runs `fn` with `timing` as its request context. Node 20's AsyncLocalStorage turns async hooks on for the whole
 * process on its first use, and every promise afterwards pays an init hook: the storage is disabled again whenever
 * no request is inside one, so the requests that never need it (the fast path) do not pay for it.
 */
export async function withRequestTiming<T>(timing: RequestTiming, fn: () => Promise<T>): Promise<T> {
  inFlight += 1;
  try {
    return await requestTiming.run(timing, fn);
  } finally {
    inFlight -= 1;
    if (inFlight === 0) requestTiming.disable();
  }
}

export function recordUpstreamWait(ms: number): void {
  const t = requestTiming.getStore();
  if (t) t.upstreamWaitMs += ms;
}
