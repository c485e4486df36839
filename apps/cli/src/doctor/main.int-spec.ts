import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SealedArchive, sha256Hex } from '@guardian/archive';

import { startStack, type Stack } from '../../../../test/support/stack';
import type { CliIo } from '../common/cli-io';
import { main } from './main';

function captureIo(env: Record<string, string>): CliIo & { out: () => string } {
  let out = '';
  return {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: () => true, isTTY: false },
    env,
    home: '/nonexistent-home',
    now: () => new Date(),
    out: () => out,
  };
}

/** The status column of each check, by name: `{ sidecar: 'ok', ... }`. */
function statuses(out: string): Record<string, string> {
  const rows = out.split('\n').filter((l) => /^(ok|note|skip|FAIL) /.test(l));
  // Status in columns 0-4, the check's name in columns 6-15 (renderCheck pads both).
  return Object.fromEntries(rows.map((l) => [l.slice(6, 16).trim(), l.slice(0, 5).trim()]));
}

async function chat(stack: Stack): Promise<number> {
  const res = await fetch(`${stack.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'stub-model', messages: [{ role: 'user', content: 'hello there' }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('context-guardian-doctor against a running sidecar', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  it('passes with the upstream not contacted yet, then reports it answering, then failing', async () => {
    const io = () => captureIo({ GUARDIAN_DATA_DIR: stack.dataDir, GUARDIAN_URL: stack.guardian.url });
    const first = io();
    expect(await main([], first)).toBe(0);
    expect(statuses(first.out())).toEqual({
      node: 'ok',
      'data dir': 'ok',
      sidecar: 'ok',
      stats: 'ok',
      upstream: 'note',
      archive: 'note',
    });
    expect(first.out()).toContain(
      `ok    sidecar    ready at ${stack.guardian.url} (version test; span volume writable`,
    );
    expect(first.out()).toMatch(/ok {4}stats {6}window .*; compactions 0; fail-open 0\n/);
    expect(first.out()).toContain('not contacted yet');
    expect(first.out()).not.toContain('fix:');
    expect(first.out().trimEnd().split('\n').at(-1)).toBe('all good');

    expect(await chat(stack)).toBe(200);
    const second = io();
    expect(await main([], second)).toBe(0);
    expect(second.out()).toContain(
      `ok    upstream   ${stack.stub.baseUrl.replace(/\/+$/, '')} answered the last request`,
    );

    await stack.stub.close();
    expect(await chat(stack)).toBeGreaterThanOrEqual(500);
    const third = io();
    expect(await main(['--json'], third)).toBe(1);
    const report = JSON.parse(third.out());
    expect(report.ok).toBe(false);
    expect(report.checks.find((c: { name: string }) => c.name === 'upstream')).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('check GUARDIAN_UPSTREAM_URL'),
    });
  });
});

describe('context-guardian-doctor with an admin token set', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ env: { GUARDIAN_ADMIN_TOKEN: 'admin-secret' } });
  });
  afterAll(async () => {
    await stack.close();
  });

  it('says to set GUARDIAN_TOKEN when stats refuse it, and passes with it', async () => {
    const without = captureIo({ GUARDIAN_DATA_DIR: stack.dataDir, GUARDIAN_URL: stack.guardian.url });
    expect(await main([], without)).toBe(1);
    expect(without.out()).toContain(
      'FAIL  stats      /guardian/stats answered 401\n      fix: set GUARDIAN_TOKEN',
    );
    const withToken = captureIo({
      GUARDIAN_DATA_DIR: stack.dataDir,
      GUARDIAN_URL: stack.guardian.url,
      GUARDIAN_TOKEN: 'admin-secret',
    });
    expect(await main([], withToken)).toBe(0);
    expect(withToken.out()).not.toContain('admin-secret');
  });
});

describe('context-guardian-doctor with nothing running', () => {
  let dataDir: string;

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'cg-doctor-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('fails the sidecar check with a fix and skips what needs it', async () => {
    const port = await closedPort();
    const io = captureIo({ GUARDIAN_DATA_DIR: join(dataDir, 'not-yet'), GUARDIAN_PORT: String(port) });
    expect(await main(['--timeout', '2'], io)).toBe(1);
    const out = io.out();
    expect(statuses(out)).toEqual({
      node: 'ok',
      'data dir': 'ok',
      sidecar: 'FAIL',
      stats: 'skip',
      upstream: 'skip',
      archive: 'note',
    });
    expect(out).toContain(
      `ok    data dir   ${join(dataDir, 'not-yet')} (not created yet; ${dataDir} is writable)`,
    );
    expect(out).toContain(
      `FAIL  sidecar    no answer at http://127.0.0.1:${port}/readyz (SIDECAR_UNREACHABLE: ECONNREFUSED)`,
    );
    expect(out).toContain(
      '      fix: start the sidecar (context-guardian), or point --url / GUARDIAN_URL at the one running',
    );
    expect(out.trimEnd().split('\n').at(-1)).toBe('something needs fixing');
  });

  it('fails a data dir that is a file, and an archive whose span was edited', async () => {
    const archive = new SealedArchive({ spanDir: join(dataDir, 'spans'), keepSpans: 500, replica: 'doc1' });
    const { run } = await archive.write({
      kind: 'compaction',
      sessionHash: sha256Hex('doctor'),
      route: 'chat',
      model: 'demo',
      messages: [{ role: 'user', content: 'kept verbatim' }],
      firstIndex: 1,
      summary: 'S.',
      at: new Date(),
    });
    const port = await closedPort();
    const healthy = captureIo({ GUARDIAN_DATA_DIR: dataDir, GUARDIAN_URL: `http://127.0.0.1:${port}` });
    await main([], healthy);
    expect(healthy.out()).toContain('ok    archive    1 run(s), 1 chain line(s) verify OK');

    appendFileSync(join(dataDir, 'spans', run, '0001.json'), ' ');
    const blocker = join(dataDir, 'a-file');
    writeFileSync(blocker, '');
    const io = captureIo({
      GUARDIAN_DATA_DIR: blocker,
      GUARDIAN_SPAN_DIR: join(dataDir, 'spans'),
      GUARDIAN_URL: `http://127.0.0.1:${port}`,
    });
    expect(await main([], io)).toBe(1);
    expect(io.out()).toContain(
      `FAIL  data dir   ${blocker} is not a folder\n      fix: set GUARDIAN_DATA_DIR`,
    );
    expect(io.out()).toContain(
      `FAIL  archive    BREAK in 1 of 1 run(s): ${run} content-changed\n      fix: context-guardian-recall --verify`,
    );
  });

  it('exits 2 on a bad option', async () => {
    const io = captureIo({ GUARDIAN_DATA_DIR: dataDir });
    expect(await main(['--timeout', 'soon'], io)).toBe(2);
  });
});
