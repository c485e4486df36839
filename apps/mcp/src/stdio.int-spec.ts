import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { SealedArchive, sha256Hex } from '@guardian/archive';

// The real process over real pipes: stdout must carry nothing but protocol, logs go to stderr.
const ROOT = resolve(__dirname, '..', '..', '..');

describe('context-guardian-mcp over stdio', () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'cg-mcp-stdio-'));
    const archive = new SealedArchive({ spanDir: join(dataDir, 'spans'), keepSpans: 500, replica: 'stdio1' });
    await archive.write({
      kind: 'compaction',
      sessionHash: sha256Hex('stdio'),
      route: 'chat',
      model: 'demo',
      messages: [{ role: 'user', content: 'The rollback plan lives in the ops wiki.' }],
      firstIndex: 1,
      summary: 'Ops.',
      at: new Date(),
    });
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const serverArgs = (): string[] => [
    '-r',
    join(ROOT, 'test', 'support', 'swc-register.js'),
    join(ROOT, 'apps', 'mcp', 'src', 'main.ts'),
  ];

  it('answers every call piped in before stdin closed, then exits 0 by itself', async () => {
    const child = spawn(process.execPath, serverArgs(), {
      env: { PATH: process.env.PATH ?? '', GUARDIAN_DATA_DIR: dataDir, HOME: dataDir },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    const lines = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'sh', version: '0' } },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_seal_status', arguments: {} } },
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'search_spans', arguments: { term: 'ops wiki' } },
      },
    ];
    child.stdin.end(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    expect(await exited).toBe(0);
    const replies = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(replies.map((r) => r.id).sort()).toEqual([1, 2, 3]);
    expect(JSON.stringify(replies.find((r) => r.id === 2))).toContain('OK: 1 run(s) verified');
  });

  it('answers initialize, tools/list and tools/call, logging to stderr only', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        '-r',
        join(ROOT, 'test', 'support', 'swc-register.js'),
        join(ROOT, 'apps', 'mcp', 'src', 'main.ts'),
      ],
      env: { PATH: process.env.PATH ?? '', GUARDIAN_DATA_DIR: dataDir, HOME: dataDir },
      stderr: 'pipe',
    });
    let logs = '';
    (transport.stderr as PassThrough | null)?.on('data', (chunk: Buffer) => (logs += chunk.toString('utf8')));
    const client = new Client({ name: 'jest', version: '0.0.0' });
    // A stray non-protocol line on stdout would surface here as a parse error.
    const errors: Error[] = [];
    client.onerror = (err) => errors.push(err);
    await client.connect(transport);
    try {
      expect(client.getServerVersion()).toMatchObject({ name: 'context-guardian' });
      expect((await client.listTools()).tools).toHaveLength(7);
      const found = await client.callTool({ name: 'search_spans', arguments: { term: 'rollback plan' } });
      expect(JSON.stringify(found.content)).toContain('The rollback plan lives in the ops wiki.');
    } finally {
      await client.close();
    }
    expect(errors).toEqual([]);
    expect(logs).toContain('context-guardian-mcp serving on stdio');
  });
});
