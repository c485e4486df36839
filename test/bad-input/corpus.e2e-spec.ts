import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { startStack, type Stack } from '../support/stack';
import { CORPUS, LIMIT, type Entry } from './corpus';

// Bad input loses nothing (docs/RELIABILITY.md): every entry of the corpus either reaches the upstream byte for
// byte, with the upstream's answer going back, or is refused by guardian where ARCHITECTURE.md#fail-open rule 6 says
// so, with a stable code. Nothing makes guardian answer 500, and no parser throws (the internal fail-open count stays
// 0).

const RECALL = join(__dirname, '..', '..', 'bin', 'context-guardian-recall.js');

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function send(url: string, e: Entry): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = e.body === undefined ? undefined : Buffer.from(e.body);
    const headers: Record<string, string> = { ...e.headers };
    if (body !== undefined && !e.chunked) headers['content-length'] = String(body.length);
    // Host, port and path apart: a URL string would be parsed, and its dot segments resolved, before sending.
    const { hostname, port } = new URL(url);
    const options = { host: hostname, port, path: e.path, method: e.method ?? 'GET', headers };
    const req = httpRequest(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('error', reject);
    });
    // A server that refuses early (413) may close before the whole body is written: the answer still counts.
    req.on('error', reject);
    if (body === undefined) req.end();
    else if (e.chunked) {
      for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.subarray(i, i + 64 * 1024));
      req.end();
    } else req.end(body);
  });
}

describe('the bad-input corpus', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      stub: { window: 1_000_000 },
      env: { GUARDIAN_MAX_BODY_BYTES: String(LIMIT), GUARDIAN_NUM_CTX: '1000000' },
    });
  });
  afterAll(async () => {
    await stack.close();
  });

  const internalFailOpens = async () =>
    (
      (await (await fetch(`${stack.guardian.url}/guardian/stats`)).json()) as {
        fail_open: { internal: number };
      }
    ).fail_open.internal;

  it.each(CORPUS.map((e) => [e.name, e] as const))('%s', async (_name, e) => {
    stack.stub.reset();
    const before = await internalFailOpens();
    const res = await send(stack.guardian.url, e);
    expect(res.body).not.toContain('GUARDIAN_INTERNAL');
    const upstream = stack.stub.requests.filter((r) => r.route !== 'window' && r.route !== 'tokenize');
    if (e.expect === 'forwarded') {
      expect(upstream).toHaveLength(1);
      const got = upstream[0]!;
      expect(got.body.equals(Buffer.from(e.body ?? ''))).toBe(true);
      expect(res.status).toBe(got.status);
      // Guardian's own headers never travel upstream.
      expect(Object.keys(got.headers).filter((h) => h.startsWith('x-guardian-'))).toEqual([]);
      if (e.headers?.['x-guardian-session']?.length === 300)
        expect(res.headers['x-guardian-warning']).toContain('X-Guardian-Session ignored');
    } else {
      expect(res.status).toBe(e.expect.status);
      expect(JSON.stringify(JSON.parse(res.body))).toContain(`"code":"${e.expect.code}"`);
      expect(upstream).toEqual([]);
    }
    // A parser that throws fails open (forwarded unchanged, counted); only a stack overflow is allowed to.
    if (!e.mayFailOpen) expect(await internalFailOpens()).toBe(before);
  });

  it('made no folder but its own in the data folder', async () => {
    expect((await readdir(stack.dataDir)).sort()).toEqual(expect.arrayContaining(['spans']));
    // native-compaction.key: the deployment's handle key, made at first start (docs/native-compaction.md);
    // usage: the usage log of answered requests and summariser calls (ADR 0027).
    for (const entry of await readdir(stack.dataDir))
      expect(['spans', 'log', 'receipts', 'usage', 'native-compaction.key']).toContain(entry);
  });

  it.each([
    ['--repair', '../../etc'],
    ['--repair', 'a/b'],
    ['--verify', '--run', '../x'],
  ])('the recall CLI refuses a run id that leaves the span folder: %s %s (exit 2)', async (...args) => {
    const err = await promisify(execFile)(process.execPath, [RECALL, ...args], {
      env: { PATH: process.env.PATH ?? '', GUARDIAN_DATA_DIR: stack.dataDir },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(err.code).toBe(2);
    expect(err.stderr).toMatch(/run id/i);
  });
});
