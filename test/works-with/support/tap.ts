import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';

/** One request that went through a {@link Tap}. The body stays in memory only, for shape recording. */
export interface TapRecord {
  method: string;
  /** Path with its query string. */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  status: number;
  /** The `X-Guardian-Warning` the sidecar answered with, if any (an ignored session header, docs/sessions.md). */
  warning?: string;
}

/**
 * A loopback reverse proxy that records what passes through it, so a runner can see what a real client sent
 * (client -> tap -> sidecar) or what the sidecar asked a real server (sidecar -> tap -> llama-server), e.g. whether
 * `/tokenize` was called. Responses stream through unchanged.
 */
export interface Tap {
  url: string;
  records: TapRecord[];
  close(): Promise<void>;
}

export async function startTap(target: string): Promise<Tap> {
  const to = new URL(target);
  const records: TapRecord[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const rec: TapRecord = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        body,
        status: 0,
      };
      records.push(rec);
      const headers = { ...req.headers, host: to.host };
      const up = request(
        // A fresh connection each time: a pooled one that the server closed while idle would fail the request
        // with "socket hang up", a failure of the tap and not of what it watches.
        { host: to.hostname, port: to.port, method: rec.method, path: rec.url, headers, agent: false },
        (upRes) => {
          rec.status = upRes.statusCode ?? 0;
          const warning = upRes.headers['x-guardian-warning'];
          if (typeof warning === 'string') rec.warning = warning;
          res.writeHead(rec.status, upRes.headers);
          upRes.pipe(res);
        },
      );
      up.on('error', (err) => {
        // The target went away: answer 502 so the client sees a failure instead of a hang.
        rec.status = 502;
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `tap: ${err.message}` } }));
      });
      up.end(body);
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    records,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
