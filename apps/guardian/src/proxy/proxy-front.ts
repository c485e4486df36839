import type { IncomingMessage, ServerResponse } from 'node:http';

import type { GuardianMetrics } from '@guardian/telemetry';

import { ownedRoute, pathOnly } from '../formats/owned-route';
import type { HostGate } from '../guardian-api/access.guard';
import { apiStyleOf } from '../http/api-style';
import { GuardianError, toHttpError } from '../http/http-error';
import { SHUTTING_DOWN_RETRY_AFTER_SECONDS, shuttingDown, type ServingState } from '../http/serving-state';
import type { GuardianLogger } from '../observability/guardian-logger';
import type { OpenStreams } from './stream-ending';

/** Methods forwarded upstream (RFC 9110 §9 plus PATCH); CONNECT and TRACE are not proxied (Fastify answers 404). */
export const PROXIED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

const OWN_ENDPOINTS = new Set(['/healthz', '/readyz', '/metrics', '/favicon.ico']);

/** Guardian's own namespace and probes (ARCHITECTURE.md#http-surface): served by Fastify and Nest, never forwarded. */
export function isOwnEndpoint(url: string): boolean {
  const path = pathOnly(url);
  return path === '/guardian' || path.startsWith('/guardian/') || OWN_ENDPOINTS.has(path);
}

/** One proxied request as the edge hands it on: node's own objects, the body as sent, the request id. */
export interface ProxiedRequest {
  req: IncomingMessage;
  res: ServerResponse;
  url: string;
  /** The body's exact bytes; undefined when the request has none (or is a GET/HEAD). */
  body: Buffer | undefined;
  id: string;
  /** Where the proxy registers a streamed answer, so shutdown can end it with an error event (stream-ending.ts). */
  streams: OpenStreams;
}

export interface ProxyHandler {
  handle(p: ProxiedRequest): Promise<void>;
}

/**
 * The front door of every proxied path: a node:http request listener that runs before Fastify (ADR 0013). It does
 * what Fastify did for these routes, and no more: the DNS-rebinding gate, the body limit (413), the request id
 * (`X-Request-Id` or a counter), `Connection: close` while shutting down and 503 once closing; then it hands node's
 * request and response to the proxy. Fastify's per-request pipeline (routing, hooks, reply, the stream pump) cost the
 * sidecar more CPU than a whole bare proxy spends on a request (docs/BENCHMARKS.md).
 */
export class ProxyFront {
  private nextId = 0;

  constructor(
    private readonly deps: {
      proxy: ProxyHandler;
      gate: HostGate;
      metrics: GuardianMetrics;
      logger: GuardianLogger;
      bodyLimit: number;
      /** Shutdown's phases: answers go out with `Connection: close`, then new requests are refused with 503. */
      serving: ServingState;
      streams: OpenStreams;
    },
  ) {}

  /** True for the requests this front serves; everything else goes to Fastify (own endpoints, CONNECT, TRACE). */
  owns(req: IncomingMessage): boolean {
    return PROXIED_METHODS.has(req.method ?? '') && !isOwnEndpoint(req.url ?? '/');
  }

  serve(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const serving = this.deps.serving;
    if (serving.draining) res.setHeader('connection', 'close');
    if (serving.refusing) {
      // The listener is closed; this came on a connection kept alive from before. Answered in guardian's own shape,
      // with a hint to retry (another replica takes it), and the connection is closed after it (issue 30 item 1).
      res.setHeader('retry-after', String(SHUTTING_DOWN_RETRY_AFTER_SECONDS));
      sendError(req, res, shuttingDown());
      req.resume();
      return;
    }
    const method = req.method ?? 'GET';
    // DNS rebinding (ARCHITECTURE.md#access): checked before anything is read, parsed or forwarded.
    const refusal = this.deps.gate.verdict(method, req.headers);
    if (refusal) {
      this.deps.metrics.requests.inc({ route: ownedRoute(method, url) ?? 'other', outcome: 'refused' });
      sendError(req, res, refusal);
      return;
    }
    if (isWebSocketUpgrade(req)) {
      this.refuseWebSocket(req, res, url);
      return;
    }
    const header = req.headers['x-request-id'];
    const id = typeof header === 'string' && header !== '' ? header : `req-${(this.nextId++).toString(36)}`;
    if (method === 'GET' || method === 'HEAD' || !hasBody(req)) {
      this.run({ req, res, url, body: undefined, id, streams: this.deps.streams });
      return;
    }
    const declared = Number(req.headers['content-length']);
    if (declared > this.deps.bodyLimit) {
      this.tooLarge(req, res);
      return;
    }
    // A body in several chunks with a Content-Length is read straight into one buffer of that size: collecting the
    // chunks and joining them held every big body twice at the moment of the join.
    const known = Number.isSafeInteger(declared) && declared > 0;
    let whole: Buffer | undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      if (size + chunk.length > this.deps.bodyLimit) {
        req.off('data', onData);
        req.off('end', onEnd);
        this.tooLarge(req, res);
        return;
      }
      if (size === 0 && known && chunk.length < declared) whole = Buffer.allocUnsafe(declared);
      if (whole && size + chunk.length <= whole.length) chunk.copy(whole, size);
      else {
        // More than it said (Node's parser frames bodies by Content-Length, so only as a safeguard): chunks again.
        if (whole) chunks.push(whole.subarray(0, size));
        whole = undefined;
        chunks.push(chunk);
      }
      size += chunk.length;
    };
    const onEnd = (): void => {
      const body = whole
        ? whole.subarray(0, size)
        : chunks.length === 1
          ? chunks[0]!
          : Buffer.concat(chunks, size);
      this.run({ req, res, url, body, id, streams: this.deps.streams });
    };
    req.on('data', onData);
    req.once('end', onEnd);
  }

  private run(p: ProxiedRequest): void {
    this.deps.proxy.handle(p).catch((err: unknown) => {
      // The proxy fails open on everything it expects; this is a bug, answered like Fastify's error handler did.
      this.deps.logger.error({ reqId: p.id, err }, 'proxy handler failed');
      if (p.res.headersSent) p.res.destroy();
      else sendError(p.req, p.res, err);
    });
  }

  /**
   * Guardian relays HTTP, not WebSockets: a handshake forwarded as a plain request reached the upstream as a GET it
   * has no route for, and Codex retried its Responses WebSocket about five times (7 s) on that 404 before it fell
   * back to HTTPS. On 426 it falls back at once (docs/native-compaction.md#websocket): the one status its transport
   * treats as "this server speaks HTTP only". Never forwarded; the connection closes after the answer.
   */
  private refuseWebSocket(req: IncomingMessage, res: ServerResponse, url: string): void {
    const route = ownedRoute('POST', url) ?? 'other';
    this.deps.metrics.websocketRefusals.inc({ route });
    this.deps.metrics.requests.inc({ route, outcome: 'refused' });
    // RFC 9110 §15.5.22: a 426 names the protocol to use in Upgrade; here, plain HTTP/1.1.
    res.setHeader('upgrade', 'HTTP/1.1');
    res.setHeader('connection', 'close');
    sendError(
      req,
      res,
      new GuardianError(
        'GUARDIAN_WEBSOCKET_UNSUPPORTED',
        'guardian does not relay WebSocket connections; send this request over HTTP (POST)',
        426,
      ),
    );
    req.resume();
  }

  /** Over GUARDIAN_MAX_BODY_BYTES (ARCHITECTURE.md#fail-open rule 6): refused before (or while) reading; the connection is closed. */
  private tooLarge(req: IncomingMessage, res: ServerResponse): void {
    res.setHeader('connection', 'close');
    sendError(
      req,
      res,
      new GuardianError('GUARDIAN_BODY_TOO_LARGE', 'request body over GUARDIAN_MAX_BODY_BYTES', 413),
    );
    // What is left of the body is read and dropped, so the client sees the answer rather than a reset.
    req.resume();
  }
}

/** Answers `err` through the one mapping of errors to HTTP (toHttpError), for the edge outside Nest and Fastify. */
export function sendError(req: IncomingMessage, res: ServerResponse, err: unknown): void {
  const { status, body } = toHttpError(err, apiStyleOf(req.url ?? '/', req.headers));
  res.writeHead(status, { 'content-type': 'application/json' }).end(body);
}

/** A WebSocket opening handshake (RFC 6455 §4.1): `Upgrade` names `websocket` among its protocols. */
function isWebSocketUpgrade(req: IncomingMessage): boolean {
  const upgrade = req.headers.upgrade;
  return upgrade !== undefined && /(^|,)\s*websocket\s*(\/|,|$)/i.test(upgrade);
}

/** RFC 9112 §6.3: a request has a body (perhaps an empty one) when it says how it is framed. */
function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;
}
