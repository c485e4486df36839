// What a Kubernetes Service does for a rollout, small enough to read: requests go round-robin to the backends whose
// /readyz last answered 200, polled continuously as a readiness probe is. Each request opens its own connection to
// its backend, as kube-proxy routes each new connection, so a listener that closed too early is seen as a refused
// connection rather than hidden by a kept one. A backend is never retried: every failure reaches the test.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

interface Backend {
  url: URL;
  ready: boolean;
}

export interface ProxyFailure {
  backend: string;
  path: string;
  /** The connection error (ECONNREFUSED, ECONNRESET...), or `no_backend` when none was ready. */
  code: string;
}

export class ReadinessProxy {
  readonly failures: ProxyFailure[] = [];
  /** The backend each request was sent to, in order. */
  readonly routed: string[] = [];
  private readonly backends: Backend[] = [];
  private next = 0;
  private polling = true;
  private poller: Promise<void> = Promise.resolve();

  private constructor(private readonly server: Server) {}

  static async start(): Promise<ReadinessProxy> {
    const server = createServer();
    const proxy = new ReadinessProxy(server);
    server.on('request', (req, res) => proxy.forward(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy.poller = proxy.poll();
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  add(url: string): void {
    this.backends.push({ url: new URL(url), ready: false });
  }

  remove(url: string): void {
    const i = this.backends.findIndex((b) => b.url.origin === new URL(url).origin);
    if (i >= 0) this.backends.splice(i, 1);
  }

  isReady(url: string): boolean {
    return this.backends.some((b) => b.url.origin === new URL(url).origin && b.ready);
  }

  async close(): Promise<void> {
    this.polling = false;
    await this.poller;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async poll(): Promise<void> {
    while (this.polling) {
      await Promise.all(this.backends.map(async (b) => (b.ready = (await probe(b.url)) === 200)));
      await sleep(50);
    }
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    const ready = this.backends.filter((b) => b.ready);
    const path = req.url ?? '/';
    if (ready.length === 0) {
      this.failures.push({ backend: '', path, code: 'no_backend' });
      res.writeHead(503).end();
      return;
    }
    const backend = ready[this.next++ % ready.length]!;
    this.routed.push(backend.url.origin);
    const out = request(
      {
        host: backend.url.hostname,
        port: backend.url.port,
        method: req.method,
        path,
        headers: req.headers,
        agent: false,
      },
      (answer) => {
        // Which replica answered, for a test that follows one replica's streams (a Service says nothing of it).
        res.writeHead(answer.statusCode ?? 502, { ...answer.headers, 'x-routed-to': backend.url.origin });
        answer.pipe(res);
        // Cut mid-answer: the client's stream ends without its last event, which the test reads as truncated.
        answer.on('error', () => res.destroy());
      },
    );
    out.on('error', (err: NodeJS.ErrnoException) => {
      this.failures.push({ backend: backend.url.origin, path, code: err.code ?? err.message });
      if (res.headersSent) res.destroy();
      else res.writeHead(502).end();
    });
    req.pipe(out);
  }
}

/** The status of one GET /readyz on a new connection, or 0 when the connection failed. */
function probe(url: URL): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: url.hostname, port: url.port, path: '/readyz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}
