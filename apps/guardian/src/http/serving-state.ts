import { GuardianError } from './http-error';

/**
 * Where the sidecar is in its shutdown: one object the edge (the ProxyFront, the Fastify hooks) reads on every
 * request, and the close sequence sets.
 */
export class ServingState {
  /** Shutting down: every answer not yet started carries `Connection: close`, so no kept-alive socket holds on. */
  draining = false;
  /** The listener is closed: a request that still arrives (on a kept-alive connection) is refused with 503. */
  refusing = false;
}

/** What a request refused while shutting down is told (http/shutdown.ts): another replica can take it at once. */
export const SHUTTING_DOWN_RETRY_AFTER_SECONDS = 1;

/** What a request that arrives once the sidecar no longer takes new ones is answered (503, in the route's shape). */
export function shuttingDown(): GuardianError {
  return new GuardianError(
    'GUARDIAN_SHUTTING_DOWN',
    'the sidecar is shutting down; send the request again',
    503,
  );
}
