import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyServerFactoryHandler } from 'fastify';

import { isOwnEndpoint, type ProxyFront } from '../proxy/proxy-front';
import { withoutDotSegments } from './dot-segments';

/**
 * The one node:http server the sidecar listens on, and the Fastify adapter built over it. The proxied paths are
 * served by the ProxyFront before Fastify sees them (ADR 0013); the front is a provider of the module, so it is
 * handed over once the app exists (`open`), and until then (never while listening) every request is Fastify's.
 */
export class EdgeServer {
  readonly adapter: FastifyAdapter;
  private front: ProxyFront | undefined;

  constructor(bodyLimit: number) {
    this.adapter = new FastifyAdapter({
      bodyLimit,
      // Clients and SDKs send a request id; reuse it in logs so a request can be followed across hops.
      requestIdHeader: 'x-request-id',
      // A request that arrives while guardian closes is answered in its own shape, with Retry-After (edge-hooks.ts).
      return503OnClosing: false,
      routerOptions: { ignoreTrailingSlash: false, maxParamLength: 1024 },
      serverFactory: (handler: FastifyServerFactoryHandler) => this.create(handler),
    });
  }

  /** From now on the proxied paths are the front's. */
  open(front: ProxyFront): void {
    this.front = front;
  }

  private create(handler: FastifyServerFactoryHandler): Server {
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      // Routing, access and the upstream all see the path the dot segments resolve to (`/v1/../x` is `/x`); a path
      // written under /guardian stays guardian's whatever it resolves to, so it is never forwarded.
      const url = req.url;
      if (url !== undefined && !isOwnEndpoint(url)) req.url = withoutDotSegments(url);
      if (this.front?.owns(req)) this.front.serve(req, res);
      else handler(req, res);
    });
    // Hand the upstream's answer back as it arrives, however long the summariser or the model takes: no socket
    // or request timeout (what Fastify's connectionTimeout 0 and requestTimeout 0 set on its own server).
    server.setTimeout(0);
    server.requestTimeout = 0;
    server.keepAliveTimeout = 75_000;
    return server;
  }
}
