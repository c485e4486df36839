import type { Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

import type { GuardianLogger } from '../observability/guardian-logger';
import type { OpenStreams } from '../proxy/stream-ending';
import type { ServingState } from './serving-state';

export interface ShutdownDeps {
  server: Server;
  serving: ServingState;
  streams: OpenStreams;
  logger: GuardianLogger;
}

/**
 * The first phase after SIGTERM (docs/RELIABILITY.md#shutdown): for `drainMs` everything is served as before, new
 * connections included, while /readyz answers 503 so a load balancer or the Service stops sending here; every answer
 * carries `Connection: close`, so the clients of kept-alive connections reconnect (elsewhere) for their next request.
 * Closing the listener at once refused what was already on its way (issue 30 item 1).
 */
export async function drain(deps: ShutdownDeps, drainMs: number): Promise<void> {
  deps.serving.draining = true;
  deps.logger.info({ drainMs }, 'draining: /readyz answers 503, requests are still served');
  if (drainMs > 0) await sleep(drainMs);
}

/**
 * The second phase: the listener closes (a new connection is refused by the kernel; a request on a kept-alive one is
 * answered 503 in guardian's shape with Retry-After), and answers in flight have `graceMs` to finish. A streamed
 * answer still open then ends with its route's SSE error event; whatever is left after that is closed. Resolves once
 * no connection is open.
 */
export async function stopServing(deps: ShutdownDeps, graceMs: number): Promise<void> {
  const { server, serving, streams, logger } = deps;
  serving.draining = true;
  serving.refusing = true;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // Node closes the connections that are idle when close() is called, but one whose answer had already started
  // becomes idle later and would hold the process until the grace ran out. Idle ones are closed as they appear.
  const idle = setInterval(() => server.closeIdleConnections(), 50);
  const grace = new AbortController();
  const over = sleep(graceMs, 'grace', { signal: grace.signal }).catch(() => 'closed' as const);
  try {
    if ((await Promise.race([closed.then(() => 'closed' as const), over])) === 'closed') return;
    logger.warn(
      { graceMs, streams: streams.size },
      'shutdown grace over: open streams end with an error event, other connections are closed',
    );
    await streams.endAll();
    server.closeAllConnections();
    await closed;
  } finally {
    grace.abort();
    clearInterval(idle);
  }
}
