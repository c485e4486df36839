import { execFile } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { main } from './main';

const seedReply = {
  window: 32000,
  used_after_compaction: 12900,
  pct: 40.3,
  count_source: 'estimate',
  model: 'demo',
  last_compaction_at: null,
};

interface Seen {
  url: string;
  headers: IncomingHttpHeaders;
}

// A real sidecar stand-in on port 0: `/guardian/usage` answers the seed's example, `?session=slow` never
// answers, `?session=gone` is the 404 a sidecar gives for an unknown session.
async function sidecar(): Promise<{ server: Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/guardian/usage') return void res.writeHead(404).end();
    const session = url.searchParams.get('session');
    if (session === 'slow') return; // never answers
    if (session === 'gone') return void res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(seedReply));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, seen };
}

function io(env: NodeJS.ProcessEnv = {}, stdin?: PassThrough) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: {
      stdout: { write: (s: string) => out.push(s) },
      stderr: { write: (s: string) => err.push(s) },
      stdin,
      env,
    },
  };
}

describe('context-guardian-statusline against a real HTTP server', () => {
  let s: Awaited<ReturnType<typeof sidecar>>;
  beforeAll(async () => {
    s = await sidecar();
  });
  afterAll(() => {
    s.server.closeAllConnections();
    s.server.close();
  });

  it('prints the usage line and exits 0', async () => {
    const t = io();
    await expect(main(['--url', s.url], t.io)).resolves.toBe(0);
    expect(t.out.join('')).toBe('ctx 40% (12.9k/32k) est\n');
  });

  it('finds the sidecar through GUARDIAN_URL, asks for the session and sends GUARDIAN_TOKEN', async () => {
    const t = io({ GUARDIAN_URL: `${s.url}/`, GUARDIAN_TOKEN: 'dev-token' });
    await expect(main(['--session', 'dev a/1'], t.io)).resolves.toBe(0);
    const last = s.seen[s.seen.length - 1];
    expect(last?.url).toBe('/guardian/usage?session=dev+a%2F1');
    expect(last?.headers['x-guardian-token']).toBe('dev-token');
  });

  it('sends no token header when GUARDIAN_TOKEN is unset', async () => {
    await main(['--url', s.url], io().io);
    expect(s.seen[s.seen.length - 1]?.headers['x-guardian-token']).toBeUndefined();
  });

  it('prints ctx ? and exits 1 on a 404 (unknown session)', async () => {
    const t = io();
    await expect(main(['--url', s.url, '--session', 'gone'], t.io)).resolves.toBe(1);
    expect(t.out.join('')).toBe('ctx ?\n');
  });

  it('prints ctx ? and exits 1 when the reply does not come within --timeout', async () => {
    const t = io();
    await expect(main(['--url', s.url, '--session', 'slow', '--timeout', '0.2'], t.io)).resolves.toBe(1);
    expect(t.out.join('')).toBe('ctx ?\n');
  });

  it('prints ctx ? and exits 1 when nothing listens', async () => {
    const down = createServer();
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    const { port } = down.address() as AddressInfo;
    await new Promise((resolve) => down.close(resolve));
    const t = io({ GUARDIAN_PORT: String(port) });
    await expect(main([], t.io)).resolves.toBe(1);
    expect(t.out.join('')).toBe('ctx ?\n');
  });

  it('prints ctx ? and exits 1 on a bad option, with the reason on stderr', async () => {
    const t = io();
    await expect(main(['--url', s.url, '--format', 'vim'], t.io)).resolves.toBe(1);
    expect(t.out.join('')).toBe('ctx ?\n');
    expect(t.err.join('')).toContain('vim');
  });

  it('with --format claude, reads stdin without waiting for it to end', async () => {
    const stdin = new PassThrough();
    stdin.write('{"session_id":"abc","model":{"id":"x"}}');
    const t = io({}, stdin);
    await expect(main(['--url', s.url, '--format', 'claude'], t.io)).resolves.toBe(0);
    expect(t.out.join('')).toBe('ctx 40% (12.9k/32k) est\n');
    expect(stdin.destroyed).toBe(true);
  });

  it('as a process, exits with the line while its stdin pipe stays open', async () => {
    // The status line loads node:*, commander and libs/client only; test/support/swc-register.js compiles it unbuilt
    // and resolves @guardian/client, so main.ts runs as the main module (its own "run when executed directly" branch).
    const dir = await mkdtemp(join(tmpdir(), 'cg-statusline-'));
    const hook = join(__dirname, '..', '..', '..', '..', 'test', 'support', 'swc-register.js');
    try {
      const result = await new Promise<{ code: number | null; stdout: string }>((resolve, reject) => {
        const child = execFile(
          process.execPath,
          ['-r', hook, join(__dirname, 'main.ts'), '--url', s.url, '--format', 'claude'],
          // A hang guard, never a verdict (test/support/wait.ts MUST_COME_MS): the child compiles main.ts on the fly,
          // seconds on a busy machine. A child killed by it says so, rather than failing on its exit code.
          { timeout: 5 * 60_000 },
          (error, stdout) => {
            if (error?.killed) reject(new Error(`the status line did not exit: a hang (${error.message})`));
            else resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout });
          },
        );
        child.stdin?.write('{"session_id":"abc"}'); // and never ended
      });
      expect(result).toEqual({ code: 0, stdout: 'ctx 40% (12.9k/32k) est\n' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
