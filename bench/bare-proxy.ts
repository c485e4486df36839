// The yardstick of the overhead benchmark (issue 2 item 7): the least a Node reverse proxy does. node:http in,
// undici out, bodies streamed both ways, hop-by-hop headers dropped (RFC 9110 §7.6.1), nothing read or parsed.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { Agent, request } from 'undici';

const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding']);
type Headers = Record<string, string | string[] | undefined>;

function strip(headers: Headers): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers))
    if (v !== undefined && !HOP.has(k) && k !== 'host') out[k] = v;
  return out;
}

type Proxy = { url: string; close(): Promise<void> };

export async function startBareProxy(origin: string, port = 0): Promise<Proxy> {
  const agent = new Agent({ keepAliveTimeout: 60_000, connections: 256 });
  const server = createServer((req, res) => {
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : req;
    const opts = { method: req.method as 'POST', headers: strip(req.headers), body, dispatcher: agent };
    request(`${origin}${req.url ?? '/'}`, opts).then(
      (up) => {
        res.writeHead(up.statusCode, strip(up.headers));
        up.body.pipe(res);
      },
      (err: Error) => {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: err.message, code: 'BARE_PROXY_UPSTREAM' } }));
      },
    );
  });
  server.keepAliveTimeout = 75_000;
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, close: async () => (server.close(), server.closeAllConnections(), agent.close()) };
}

// As a child process: `node bare-proxy.js <upstream origin>` prints {"url": ...} once it listens.
if (require.main === module) {
  startBareProxy(process.argv[2] ?? 'http://127.0.0.1:8000').then(
    (p) => process.stdout.write(`${JSON.stringify({ url: p.url })}\n`),
    (err: unknown) => (process.stderr.write(`bare proxy: ${String(err)}\n`), process.exit(1)),
  );
}
