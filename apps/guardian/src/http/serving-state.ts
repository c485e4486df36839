/**
 * Where the sidecar is in its shutdown: one object the edge (the ProxyFront, the Fastify hooks) reads on every
 * request, and the close sequence sets.
 */
export class ServingState {
  /** Shutting down: every answer not yet started carries `Connection: close`, so no kept-alive socket holds on. */
  draining = false;
  /** Closing: a new request is refused with 503. */
  refusing = false;
}
