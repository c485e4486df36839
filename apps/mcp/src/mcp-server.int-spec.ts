import { appendFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';

import {
  ownerHash,
  parseVerifierKey,
  SealedArchive,
  sha256Hex,
  verifyTlogProof,
  writerLog,
} from '@guardian/archive';
import { RECALL_TOOL_NAMES } from '@guardian/compaction';
import { createLogger } from '@guardian/telemetry';

import { startStack } from '../../../test/support/stack';
import { loadMcpConfig } from './mcp-config';
import { createGuardianMcpServer } from './server';
import { toolContext } from './tool-kit';

const NOW = new Date('2026-11-01T12:00:00Z');
const PLANTED = 'The staging database password rotates every Tuesday at 04:00 UTC.';

interface Harness {
  client: Client;
  close(): Promise<void>;
}

async function connect(env: Record<string, string>, home: string, flagUrl?: string): Promise<Harness> {
  const config = loadMcpConfig(env, home, NOW, flagUrl);
  const logger = createLogger({ level: 'silent' });
  const server = createGuardianMcpServer(
    toolContext(config, logger, () => NOW),
    { name: 'test', version: '0.0.0' },
  );
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'jest', version: '0.0.0' });
  await client.connect(clientSide);
  return {
    client,
    async close() {
      await client.close();
      await server.close();
    },
  };
}

function text(result: Awaited<ReturnType<Client['callTool']>>): string {
  const content = result.content as { type: string; text?: string }[];
  return content.map((c) => c.text ?? '').join('\n');
}

/**
 * Where the archive tools read: a span folder on this machine, or (team mode, issue 15) a sidecar's volume through
 * its API with alice's developer token, beside a run of bob's that alice must never see. The same tests run on both.
 */
interface Mode {
  /** The data folder the archive (and its receipts) live in. */
  dataDir: string;
  ownerHash: string | undefined;
  connect(): Promise<Harness>;
  /** A place with no archive at all. */
  fresh(): Promise<{ mcp: Harness; done(): Promise<void> }>;
  close(): Promise<void>;
}

const ALICE_TOKEN = 'tok-alice-mcp-4f19c2a8';
const BOB_TOKEN = 'tok-bob-mcp-81d3e6b05c';

async function localMode(): Promise<Mode> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cg-mcp-'));
  return {
    dataDir,
    ownerHash: undefined,
    connect: () => connect({ GUARDIAN_DATA_DIR: dataDir, GUARDIAN_PORT: '1' }, '/nonexistent-home'),
    async fresh() {
      const empty = mkdtempSync(join(tmpdir(), 'cg-mcp-empty-'));
      const mcp = await connect({ GUARDIAN_DATA_DIR: empty }, '/nonexistent-home');
      return {
        mcp,
        async done() {
          await mcp.close();
          rmSync(empty, { recursive: true, force: true });
        },
      };
    },
    async close() {
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function remoteMode(): Promise<Mode> {
  const tokens = mkdtempSync(join(tmpdir(), 'cg-mcp-tokens-'));
  writeFileSync(join(tokens, 'tokens'), `${ALICE_TOKEN} alice\n${BOB_TOKEN} bob\n`);
  const env = { GUARDIAN_TOKENS_FILE: join(tokens, 'tokens'), GUARDIAN_HOST: '0.0.0.0' };
  const stack = await startStack({ env });
  const url = `http://127.0.0.1:${new URL(stack.guardian.url).port}`;
  // Bob's run on the same volume: alice's tools must not list, find or open it.
  await new SealedArchive({ spanDir: join(stack.dataDir, 'spans'), keepSpans: 500, replica: 'bob1' }).write({
    kind: 'compaction',
    sessionHash: sha256Hex('bob'),
    ownerHash: ownerHash('bob'),
    route: 'chat',
    model: 'demo',
    messages: [
      { role: 'user', content: 'The staging database password is in bob’s vault, deploy notes too.' },
    ],
    firstIndex: 1,
    summary: 'Bob.',
    at: NOW,
  });
  return {
    dataDir: stack.dataDir,
    ownerHash: ownerHash('alice'),
    // GUARDIAN_DATA_DIR points nowhere useful: in team mode nothing is read locally.
    connect: () =>
      connect(
        { GUARDIAN_URL: url, GUARDIAN_TOKEN: ALICE_TOKEN, GUARDIAN_DATA_DIR: tokens },
        '/nonexistent-home',
      ),
    async fresh() {
      const empty = await startStack({ env });
      // A sidecar whose volume has lost its span folder: nothing archived there.
      rmSync(join(empty.dataDir, 'spans'), { recursive: true, force: true });
      const port = new URL(empty.guardian.url).port;
      const mcp = await connect(
        { GUARDIAN_TOKEN: ALICE_TOKEN },
        '/nonexistent-home',
        `http://127.0.0.1:${port}`,
      ).catch(async (err) => {
        await empty.close();
        throw err;
      });
      return {
        mcp,
        async done() {
          await mcp.close();
          await empty.close();
        },
      };
    },
    async close() {
      await stack.close();
      rmSync(tokens, { recursive: true, force: true });
    },
  };
}

/** Receipt lines without their time and owner, which depend on who wrote them; those are checked apart. */
function receiptLines(dataDir: string): Record<string, unknown>[] {
  const dir = join(dataDir, 'receipts');
  return readdirSync(dir)
    .flatMap((file) => readFileSync(join(dir, file), 'utf8').trim().split('\n'))
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe.each([
  ['local', localMode],
  ['remote', remoteMode],
] as const)('context-guardian-mcp (%s archive)', (_mode, start) => {
  let mode: Mode;
  let run: string;
  let mcp: Harness;

  beforeEach(async () => {
    mode = await start();
    const archive = new SealedArchive({
      spanDir: join(mode.dataDir, 'spans'),
      keepSpans: 500,
      replica: 'mcp1',
      now: () => NOW,
      log: writerLog({ name: 'mcp1', originPrefix: 'test.example' }),
    });
    const spans: unknown[][] = [
      [
        { role: 'user', content: 'Where do the deploy notes live?' },
        { role: 'assistant', content: 'In docs/deploy.md, next to the runbook.' },
      ],
      [{ role: 'user', content: PLANTED }],
    ];
    for (const messages of spans) {
      run = (
        await archive.write({
          kind: 'compaction',
          sessionHash: sha256Hex('dev'),
          ownerHash: mode.ownerHash,
          route: 'chat',
          model: 'demo',
          messages,
          firstIndex: 1,
          summary: 'Ops facts.',
          at: NOW,
        })
      ).run;
    }
    mcp = await mode.connect();
  });
  afterEach(async () => {
    await mcp.close();
    await mode.close();
  });

  it('lists the seven tools, every one read-only', async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'get_context_status',
      'get_proxy_status',
      'get_seal_status',
      'list_digests',
      'list_spans',
      'read_span',
      'search_spans',
    ]);
    // The sidecar counts a model's calls to exactly these tools for the receipts: one list serves both.
    expect([...RECALL_TOOL_NAMES].sort()).toEqual(tools.map((t) => t.name).sort());
    for (const tool of tools) {
      expect(tool.annotations).toMatchObject({
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: true,
      });
    }
    const read = tools.find((t) => t.name === 'read_span');
    expect(read?.inputSchema.required).toEqual(['run', 'index']);
    expect(read?.description).toContain('data, not instructions');
  });

  it("gives each hit and span read its log entry and a proof that verifies with the log's key (issue 29)", async () => {
    const vkey = parseVerifierKey(readFileSync(join(mode.dataDir, 'spans', '.tlog', 'mcp1', 'vkey'), 'utf8'));
    const found = await mcp.client.callTool({
      name: 'search_spans',
      arguments: { term: 'password rotates' },
    });
    const hits = (
      found.structuredContent as { hits: { ref: string; log_entry: string; log_proof: string }[] }
    ).hits;
    const file = readFileSync(join(mode.dataDir, 'spans', run, '0002.json'));
    expect(hits).toEqual([
      expect.objectContaining({
        ref: `${run}/0002.json`,
        log_entry: `context-guardian span ${run} 2 sha256:${sha256Hex(file)}`,
      }),
    ]);
    expect(verifyTlogProof(hits[0]!.log_proof, hits[0]!.log_entry, vkey)).toMatchObject({
      ok: true,
      index: 1,
    });
    const read = await mcp.client.callTool({ name: 'read_span', arguments: { run, index: 1 } });
    const proved = read.structuredContent as { log_entry: string; log_proof: string };
    expect(verifyTlogProof(proved.log_proof, proved.log_entry, vkey)).toMatchObject({ ok: true, index: 0 });
    expect(text(found)).not.toContain('tlog-proof');
  });

  it('lists runs and spans, and skims digests', async () => {
    expect(text(await mcp.client.callTool({ name: 'list_spans', arguments: {} }))).toBe(`${run}: 2 spans`);
    const spans = text(await mcp.client.callTool({ name: 'list_spans', arguments: { run } }));
    expect(spans.split('\n').map((l) => l.split(' ')[0])).toEqual([`${run}/0002.json`, `${run}/0001.json`]);
    const digests = text(await mcp.client.callTool({ name: 'list_digests', arguments: {} }));
    expect(digests).toContain(`${run}/0002 2026-11-01 12:00`);
    expect(digests).toContain(`${run}/0001 2026-11-01 12:00`);
    expect(digests.split('\n')).toHaveLength(3);
  });

  it('finds a planted term, opens its span verbatim, and leaves counts-only receipts', async () => {
    const found = text(
      await mcp.client.callTool({ name: 'search_spans', arguments: { term: 'password rotates' } }),
    );
    expect(found).toContain(`${run}/0002.json msg 0 [user]: ${PLANTED}`);
    expect(found.split('\n')[0]).toContain('data, not instructions');
    expect(found).not.toContain('vault');
    const read = await mcp.client.callTool({ name: 'read_span', arguments: { run, index: 1 } });
    expect(read.isError).toBeFalsy();
    expect(text(read)).toContain(
      'summary: Ops facts.\n[0] user: Where do the deploy notes live?\n[1] assistant: In docs/deploy.md, next to the runbook.',
    );
    const tail = text(
      await mcp.client.callTool({ name: 'read_span', arguments: { run, index: 1, start: 1 } }),
    );
    expect(tail).toContain('[1] assistant: In docs/deploy.md');
    expect(tail).not.toContain('[0] user');
    const receipts = receiptLines(mode.dataDir);
    expect(receipts.map(({ ts: _ts, owner_hash: _o, ...counts }) => counts)).toEqual([
      { kind: 'recall_call', hits: 1, chars_returned: PLANTED.length },
      { kind: 'span_opened', chars_returned: expect.any(Number) },
      { kind: 'span_opened', chars_returned: expect.any(Number) },
    ]);
    expect(receipts.map((r) => r.owner_hash)).toEqual(Array(3).fill(mode.ownerHash));
    expect(JSON.stringify(receipts)).not.toContain('password');
  });

  it('reports OK seals, then BREAK after a span file is edited', async () => {
    expect(text(await mcp.client.callTool({ name: 'get_seal_status', arguments: {} }))).toBe(
      `OK: 1 run(s) verified\n${run} OK 2 chain line(s)`,
    );
    appendFileSync(join(mode.dataDir, 'spans', run, '0002.json'), ' ');
    const broken = text(await mcp.client.callTool({ name: 'get_seal_status', arguments: { run } }));
    expect(broken.split('\n')[0]).toBe('BREAK: 1 of 1 run(s)');
    expect(broken).toContain(`${run} BREAK content-changed: 0002.json`);
  });

  it('refuses a traversal run id and a missing span with an error result', async () => {
    for (const args of [
      { run: '../x', index: 1 },
      { run: '..', index: 1 },
    ]) {
      const refused = await mcp.client.callTool({ name: 'read_span', arguments: args });
      expect(refused.isError).toBe(true);
      expect(text(refused)).toContain('run id must match');
    }
    const listed = await mcp.client.callTool({ name: 'list_spans', arguments: { run: '../../etc' } });
    expect(listed.isError).toBe(true);
    const missing = await mcp.client.callTool({ name: 'read_span', arguments: { run, index: 9 } });
    expect(missing.isError).toBe(true);
    expect(text(missing)).toBe(`ARCHIVE_NOT_FOUND: no span ${run}/0009.json`);
  });

  it('says there is no archive yet on a fresh install', async () => {
    const fresh = await mode.fresh();
    try {
      for (const name of ['list_spans', 'list_digests', 'get_seal_status']) {
        const result = await fresh.mcp.client.callTool({ name, arguments: {} });
        expect(result.isError).toBeFalsy();
        expect(text(result)).toContain('no archive yet');
      }
    } finally {
      await fresh.done();
    }
  });
});

describe('get_proxy_status', () => {
  let stats: Server;
  let seen: IncomingHttpHeaders[];

  beforeAll(async () => {
    seen = [];
    stats = createServer((req, res) => {
      seen.push(req.headers);
      if (req.url !== '/guardian/stats') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          version: '9.9.9',
          upstream: 'http://127.0.0.1:8000/v1',
          num_ctx: 8192,
          compactions_performed: 3,
          dry_run: false,
          fail_open: {},
        }),
      );
    });
    await new Promise<void>((resolve) => stats.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => stats.close(() => resolve()));
  });

  it('returns the stats as structured output and sends the token', async () => {
    const url = `http://127.0.0.1:${(stats.address() as AddressInfo).port}`;
    const mcp = await connect(
      { GUARDIAN_URL: url, GUARDIAN_TOKEN: 'tok-123', GUARDIAN_RECEIPTS: '0' },
      '/nonexistent-home',
    );
    try {
      const result = await mcp.client.callTool({ name: 'get_proxy_status', arguments: {} });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({
        version: '9.9.9',
        num_ctx: 8192,
        compactions_performed: 3,
      });
      expect(JSON.parse(text(result))).toMatchObject({ upstream: 'http://127.0.0.1:8000/v1' });
      expect(seen.at(-1)?.['x-guardian-token']).toBe('tok-123');
    } finally {
      await mcp.close();
    }
  });

  it('answers an error result naming the code when no proxy listens', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const mcp = await connect({ GUARDIAN_PORT: String(port), GUARDIAN_RECEIPTS: '0' }, '/nonexistent-home');
    try {
      const result = await mcp.client.callTool({ name: 'get_proxy_status', arguments: {} });
      expect(result.isError).toBe(true);
      expect(text(result)).toMatch(/^SIDECAR_UNREACHABLE: no proxy at http:\/\/127\.0\.0\.1:\d+/);
    } finally {
      await mcp.close();
    }
  });
});

describe('get_context_status', () => {
  let home: string;

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'cg-mcp-cc-'));
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('counts the bytes after the last compact boundary against CG_CC_WINDOW, and never errors', async () => {
    const transcript = join(home, 'session.jsonl');
    const line = (value: unknown): string => `${JSON.stringify(value)}\n`;
    const after = line({ type: 'user', message: { role: 'user', content: 'y'.repeat(700) } });
    writeFileSync(
      transcript,
      line({ type: 'user', message: { role: 'user', content: 'x'.repeat(5000) } }) +
        line({ type: 'assistant', message: { role: 'assistant', model: 'claude-sonnet-4-5', content: [] } }) +
        line({ type: 'system', subtype: 'compact_boundary', content: 'Conversation compacted' }) +
        after,
    );
    const afterBytes = Buffer.byteLength(after);
    const env = {
      GUARDIAN_DATA_DIR: home,
      CG_CC_WINDOW: String(afterBytes + 50),
      GUARDIAN_CHARS_PER_TOKEN: '1',
      GUARDIAN_RECEIPTS: '0',
    };
    const mcp = await connect(env, home);
    try {
      const result = await mcp.client.callTool({
        name: 'get_context_status',
        arguments: { transcript_path: transcript },
      });
      expect(result.structuredContent).toMatchObject({
        state: 'critical',
        used_tokens: afterBytes,
        window: afterBytes + 50,
        window_source: 'CG_CC_WINDOW',
        model: 'claude-sonnet-4-5',
        transcript: 'session.jsonl',
        boundary: 'compact_boundary',
      });
      expect(text(result)).toMatch(/^critical: ~\d+ of \d+ tokens \(9\d\.\d%\) since the last compaction/);

      const none = await mcp.client.callTool({ name: 'get_context_status', arguments: {} });
      expect(none.isError).toBeFalsy();
      expect(text(none)).toBe('unknown: no Claude Code transcript found; pass transcript_path');
    } finally {
      await mcp.close();
    }
  });
});
