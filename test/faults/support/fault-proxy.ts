import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

import { SUMMARY_MARKER } from '@guardian/stub-backend';

/**
 * What the upstream does wrong. The upstream-wide faults hit every request (a down backend is down for window
 * discovery and /tokenize too); the answer faults hit the client's generation requests only; the summariser
 * faults hit guardian's own summary calls only (recognised by the stub's SUMMARY_MARKER, as the stub does).
 */
export const FAULTS = [
  'none',
  'refuse',
  'hang',
  'http-503',
  'http-503-big',
  'http-400-big',
  'reset-mid-stream',
  'malformed-sse',
  'summary-empty',
  'summary-garbage',
  'summary-slow',
  'summary-hung',
] as const;
export type Fault = (typeof FAULTS)[number];

/** The canned bodies a malformed answer carries: what the client must receive byte for byte. */
export const MALFORMED = {
  sse: 'data: {"id":"x","choices":[{"delta":{"content":"par\n\ndata: [DONE\n\nevent: \ndata:\x00\xff\n\n',
  json: '{"id":"x","object":"chat.completion","choices":[{"message":{"content":"cut',
};
export const HTML_503 = '<html><body><h1>503 Service Unavailable</h1>backend is loading</body></html>';
/** Error bodies over the 1 MB guardian reads of an error answer (issue 12 defect 4): a proxy's HTML page, a 400. */
export const BIG_503 = `<html><body><h1>503 Service Unavailable</h1>${'<p>backend is loading</p>'.repeat(70_000)}</body></html>`;
export const BIG_400 = JSON.stringify({
  error: { message: 'invalid request', type: 'invalid_request_error', detail: 'x'.repeat(1_500_000) },
});

const GENERATION = new Set(['/v1/chat/completions', '/v1/messages', '/v1/responses']);

/**
 * A real HTTP server on a loopback port between guardian and the stub, injecting one fault at a time. `refuse`
 * really closes the listening socket (and drops kept-alive connections), so the next connect is refused by the
 * kernel; setting another fault listens again on the same port.
 */
export class FaultProxy {
  fault: Fault = 'none';
  /** Delay of `summary-slow`, in ms. */
  slowMs = 1500;
  /** Requests each fault was applied to. */
  readonly injected = new Map<Fault, number>();
  private readonly sockets = new Set<Socket>();
  private readonly held = new Set<ServerResponse>();
  private port = 0;
  private listening = false;

  private constructor(
    private readonly server: Server,
    private readonly target: URL,
  ) {
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
  }

  static async start(targetOrigin: string): Promise<FaultProxy> {
    const server = createServer({ keepAlive: true });
    const proxy = new FaultProxy(server, new URL(targetOrigin));
    server.on('request', (req, res) => proxy.receive(req, res));
    await proxy.listen();
    return proxy;
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get baseUrl(): string {
    return `${this.origin}/v1`;
  }

  async set(fault: Fault): Promise<void> {
    this.fault = fault;
    this.release();
    if (fault === 'refuse') {
      if (this.listening) await new Promise<void>((resolve) => this.server.close(() => resolve()));
      this.listening = false;
      for (const s of this.sockets) s.destroy();
    } else if (!this.listening) {
      await this.listen();
    }
  }

  async close(): Promise<void> {
    this.release();
    for (const s of this.sockets) s.destroy();
    if (this.listening) await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.listening = false;
  }

  /** Ends every request a hang is holding (they get a reset, as when a hung backend is restarted). */
  private release(): void {
    for (const res of this.held) res.destroy();
    this.held.clear();
  }

  private async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
    this.listening = true;
  }

  private count(fault: Fault): void {
    this.injected.set(fault, (this.injected.get(fault) ?? 0) + 1);
  }

  private receive(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const generation = req.method === 'POST' && GENERATION.has(path);
      const summary = generation && body.includes(SUMMARY_MARKER);
      this.route(req, res, body, { generation, summary });
    });
  }

  private route(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    kind: { generation: boolean; summary: boolean },
  ): void {
    const fault = this.fault;
    const answer = kind.generation && !kind.summary;
    if (fault === 'hang' || (fault === 'summary-hung' && kind.summary)) {
      this.count(fault);
      this.held.add(res);
      res.once('close', () => this.held.delete(res));
      return;
    }
    if (fault === 'refuse') {
      // A connection accepted just before the listener closed: drop it, as a dying backend does.
      this.count(fault);
      res.destroy();
      return;
    }
    if (fault === 'http-503') {
      this.count(fault);
      res.writeHead(503, { 'content-type': 'text/html', 'retry-after': '7' }).end(HTML_503);
      return;
    }
    if ((fault === 'http-503-big' || fault === 'http-400-big') && answer) {
      this.count(fault);
      if (fault === 'http-503-big')
        res.writeHead(503, { 'content-type': 'text/html', 'retry-after': '7' }).end(BIG_503);
      else res.writeHead(400, { 'content-type': 'application/json' }).end(BIG_400);
      return;
    }
    if (fault === 'malformed-sse' && answer) {
      this.count(fault);
      const stream = /"stream"\s*:\s*true/.test(body.toString('utf8'));
      res
        .writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' })
        .end(stream ? MALFORMED.sse : MALFORMED.json);
      return;
    }
    if (fault === 'summary-garbage' && kind.summary) {
      this.count(fault);
      res.writeHead(200, { 'content-type': 'application/json' }).end('\x00\x01<<not json>> \ufffd garbage');
      return;
    }
    const delay = fault === 'summary-slow' && kind.summary ? this.slowMs : 0;
    if (delay > 0) this.count(fault);
    // A reset breaks every answer but the summariser's (its faults are the summary-* ones).
    setTimeout(
      () => this.forward(req, res, body, { fault, reset: !kind.summary, summary: kind.summary }),
      delay,
    );
  }

  private forward(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    o: { fault: Fault; reset: boolean; summary: boolean },
  ): void {
    const upstream = httpRequest(
      {
        host: this.target.hostname,
        port: this.target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: this.target.host },
      },
      (up) => {
        if (o.fault === 'summary-empty' && o.summary) return this.emptySummary(up, res);
        res.writeHead(up.statusCode ?? 502, up.headers);
        if (o.fault === 'reset-mid-stream' && o.reset) {
          this.count(o.fault);
          // Some bytes of the answer, then the connection dies: the client has seen a 200 and half a body.
          up.once('data', (chunk: Buffer) => {
            res.write(chunk.subarray(0, Math.max(1, Math.floor(chunk.length / 2))));
            setTimeout(() => {
              up.destroy();
              res.destroy();
            }, 20);
          });
          return;
        }
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.once('close', () => upstream.destroy());
    upstream.end(body);
  }

  /** The stub's well-formed summary answer with every text emptied: a model that answered nothing. */
  private emptySummary(up: IncomingMessage, res: ServerResponse): void {
    this.count('summary-empty');
    const chunks: Buffer[] = [];
    up.on('data', (c: Buffer) => chunks.push(c));
    up.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const emptied = text.replace(/"(content|text|output_text)"\s*:\s*"(?:[^"\\]|\\.)*"/g, '"$1":""');
      res.writeHead(up.statusCode ?? 200, { 'content-type': 'application/json' }).end(emptied);
    });
  }
}
