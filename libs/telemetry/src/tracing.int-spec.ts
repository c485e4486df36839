import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

// The OTLP exporter loads node:http with a dynamic import(), which jest's module sandbox refuses without
// --experimental-vm-modules. So the SDK runs in a plain child node process, with tracing.ts compiled by
// @swc/core (the compiler jest already uses) through a one-line require hook.
const CHILD = `
const swc = require('@swc/core');
require.extensions['.ts'] = (m, file) => m._compile(swc.transformFileSync(file, {
  module: { type: 'commonjs' }, jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
}).code, file);
const { genAiAttributes, startOtelSdk, withSpan } = require(process.argv[1]);
(async () => {
  const sdk = await startOtelSdk(process.env);
  await withSpan('guardian.summarise', genAiAttributes({ model: 'demo', inputTokens: 900 }), () => 'ok');
  await sdk.shutdown();
})().catch((err) => { console.error(err); process.exit(1); });
`;

interface Post {
  path: string;
  body: string;
}

function collector(): Promise<{ server: Server; url: string; posts: Post[] }> {
  const posts: Post[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}`, posts });
    });
  });
}

function runChild(env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['-e', CHILD, join(__dirname, 'tracing.ts')],
      // A hang guard, never a verdict (test/support/wait.ts MUST_COME_MS): the child loads the OpenTelemetry SDK and
      // compiles tracing.ts on the fly, seconds on a busy machine.
      { cwd: join(__dirname, '..', '..', '..'), env, timeout: 5 * 60_000 },
      (err, _stdout, stderr) =>
        err
          ? reject(new Error(`child ${err.killed ? 'hung' : 'failed'}: ${stderr}`, { cause: err }))
          : resolve(),
    );
  });
}

describe('startOtelSdk with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  let col: Awaited<ReturnType<typeof collector>>;
  beforeAll(async () => {
    col = await collector();
  });
  afterAll(() => col.server.close());

  it("exports spans to the operator's collector at <endpoint>/v1/traces", async () => {
    await runChild({
      PATH: process.env.PATH,
      OTEL_EXPORTER_OTLP_ENDPOINT: `${col.url}/`,
      OTEL_SERVICE_NAME: 'cg-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=cg-ci',
      // Only traces are under test; keep the SDK from exporting metrics or logs to the stand-in.
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
    });
    const traces = col.posts.filter((p) => p.path === '/v1/traces');
    expect(traces.length).toBeGreaterThan(0);
    const body = traces.map((p) => p.body).join('\n');
    expect(body).toContain('guardian.summarise');
    expect(body).toContain('gen_ai.request.model');
    expect(body).toContain('cg-test');
    expect(body).toContain('cg-ci');
  });
});
