import {
  appendFileSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';

import { listRuns, listSpans, searchArchive, sha256Hex, verifyArchive, verifyLogs } from '@guardian/archive';

import { main } from './main';
import { TranscriptFixture } from './testing/transcript-fixture';
import { testIo, type TestIo } from './testing/test-io';

const SESSION = '5c1e7a52-9d8e-4a57-b7c3-2f0c4b1d9e11';
const HASH = sha256Hex(SESSION);

interface StoredSpan {
  kind: string;
  route: string;
  first_index: number;
  messages: unknown[];
}

describe('context-guardian-claude-code capture', () => {
  let root: string;
  let dataDir: string;
  let spanDir: string;
  let transcript: string;
  let io: TestIo;
  let fx: TranscriptFixture;

  const capture = async (event = 'SessionEnd'): Promise<number> => {
    io.setStdin(
      JSON.stringify({
        session_id: SESSION,
        transcript_path: transcript,
        cwd: root,
        hook_event_name: event,
        reason: 'exit',
      }),
    );
    return main(['capture'], io);
  };
  const captureRuns = async (): Promise<string[]> =>
    (await listRuns({ spanDir })).filter((r) => r.session_hash === HASH).map((r) => r.run);
  const spans = async (): Promise<StoredSpan[]> => {
    const out: StoredSpan[] = [];
    for (const run of await captureRuns()) {
      for (const s of await listSpans({ spanDir, run })) {
        out.push(JSON.parse(readFileSync(join(spanDir, run, s.file), 'utf8')) as StoredSpan);
      }
    }
    return out.sort((a, b) => a.first_index - b.first_index);
  };
  /** The transcript bytes the archive holds, rebuilt from the spans alone. */
  const archivedText = async (): Promise<string> =>
    (await spans())
      .flatMap((s) => s.messages.map((m) => `${typeof m === 'string' ? m : JSON.stringify(m)}\n`))
      .join('');

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'cc-capture-'));
    dataDir = join(root, 'data');
    spanDir = join(dataDir, 'spans');
    transcript = join(root, 'session.jsonl');
    io = testIo({ home: root, dataDir, env: { CLAUDE_CONFIG_DIR: join(root, '.claude') } });
    fx = new TranscriptFixture({ sessionId: SESSION, cwd: root });
    fx.user('Fix the flaky login test in src/login.ts', {
      reminder: 'The user opened src/login.ts in the IDE.',
    })
      .assistant('I will look at the test first.')
      .tool('Read', { file_path: 'src/login.ts' }, { text: 'export function login() {}' })
      .tool(
        'Bash',
        { command: 'npm test -- login' },
        { text: 'FAIL src/login.spec.ts: timeout', isError: true },
      );
    writeFileSync(transcript, fx.takeText());
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('names the capture run cc-<session hash 12>-<replica> (ARCHITECTURE.md#files)', async () => {
    await capture();
    const [run] = await captureRuns();
    expect(run).toMatch(new RegExp(`^cc-${HASH.slice(0, 12)}-[0-9a-f]{8}$`));
  });

  it('archives every complete line into one sealed, searchable run', async () => {
    expect(await capture()).toBe(0);
    expect(io.out()).toBe('');
    expect(await archivedText()).toBe(readFileSync(transcript, 'utf8'));
    expect(await captureRuns()).toHaveLength(1);
    const [span] = await spans();
    expect(span).toMatchObject({
      kind: 'capture',
      route: 'claude-code',
      first_index: 0,
      messages: expect.any(Array),
    });
    expect(await verifyArchive({ spanDir })).toMatchObject({ ok: true });
    const hits = await searchArchive({ spanDir, term: 'flaky login test', session: HASH.slice(0, 12) });
    expect(hits.hits[0]?.role).toBe('user');
  });

  it('adds nothing when captured twice, and only the new lines when the transcript grew', async () => {
    await capture('PreCompact');
    const firstSize = statSync(transcript).size;
    expect(await capture()).toBe(0);
    expect(await spans()).toHaveLength(1);
    expect(await captureRuns()).toHaveLength(1);

    fx.user('Now also update the docs').tool(
      'Edit',
      { file_path: 'docs/login.md', old_string: 'a', new_string: 'b' },
      { text: 'ok' },
    );
    const added = fx.takeText();
    appendFileSync(transcript, added);
    await capture();
    const all = await spans();
    expect(all).toHaveLength(2);
    expect(all[1]?.first_index).toBe(firstSize);
    expect(all[1]?.messages).toHaveLength(3);
    expect(await archivedText()).toBe(readFileSync(transcript, 'utf8'));
    expect((await verifyArchive({ spanDir })).ok).toBe(true);
  });

  it('leaves a partial last line for the next capture, then copies it whole exactly once', async () => {
    fx.assistant('Half written line that Claude Code is still appending');
    const [pending] = fx.take();
    const cut = Math.floor((pending ?? '').length / 2);
    appendFileSync(transcript, (pending ?? '').slice(0, cut));
    await capture();
    expect((await archivedText()).includes('still appending')).toBe(false);

    appendFileSync(transcript, `${(pending ?? '').slice(cut)}\n`);
    await capture();
    expect(await archivedText()).toBe(readFileSync(transcript, 'utf8'));
    expect((await archivedText()).split('still appending')).toHaveLength(2);
  });

  it('recovers its offset from the spans when the ledger is lost or behind', async () => {
    await capture();
    const ledgerFile = join(dataDir, 'claude-code', 'sessions', `${HASH}.json`);
    rmSync(ledgerFile);
    await capture();
    writeFileSync(ledgerFile, '{"v": 1, "offs');
    await capture();
    expect(await spans()).toHaveLength(1);

    fx.user('one more instruction');
    appendFileSync(transcript, fx.takeText());
    await capture();
    const ledger = JSON.parse(readFileSync(ledgerFile, 'utf8')) as { offset: number };
    writeFileSync(ledgerFile, JSON.stringify({ ...ledger, offset: 0 }));
    await capture();
    expect(await spans()).toHaveLength(2);
    expect(await archivedText()).toBe(readFileSync(transcript, 'utf8'));
  });

  it('splits a long first capture into spans of about 2 MB that rebuild the file byte for byte', async () => {
    const filler = 'x'.repeat(2000);
    for (let i = 0; i < 900; i += 1)
      fx.tool('Read', { file_path: `src/file-${i}.ts` }, { text: `${i} ${filler}` });
    // A line that does not survive JSON round-tripping is archived as text, still verbatim.
    appendFileSync(transcript, `${fx.takeText()}{"type":"summary", "summary":"spaced"}\nnot json at all\n`);
    expect(statSync(transcript).size).toBeGreaterThan(4 * 1024 * 1024);
    await capture();
    const all = await spans();
    expect(all).toHaveLength(3);
    for (const s of all.slice(0, -1)) {
      const bytes = s.messages.reduce<number>(
        (n, m) => n + Buffer.byteLength(typeof m === 'string' ? m : JSON.stringify(m)) + 1,
        0,
      );
      expect(bytes).toBeGreaterThanOrEqual(2 * 1024 * 1024);
      expect(bytes).toBeLessThan(2 * 1024 * 1024 + 20_000);
    }
    expect(await archivedText()).toBe(readFileSync(transcript, 'utf8'));
    expect((await verifyArchive({ spanDir })).ok).toBe(true);
  });

  // Issue 29 item 1 and the audit: the laptop hook's spans had no log. One log per host, taken in turns.
  const LOG = `capture-${sha256Hex(hostname()).slice(0, 8)}`;

  it("logs its spans in this host's capture log, which it lets go after each capture", async () => {
    await capture('PreCompact');
    fx.user('one more instruction');
    appendFileSync(transcript, fx.takeText());
    await capture();
    const report = await verifyLogs({ spanDir, verifiedDir: null });
    expect(report).toMatchObject({ ok: true, withoutLog: { spans: 0, runs: 0 } });
    expect(report.logs).toEqual([
      expect.objectContaining({ log: LOG, size: 2, status: 'ok', writer: 'released', waiting: 0 }),
    ]);
    expect(JSON.parse(readFileSync(join(spanDir, '.tlog', LOG, 'writer.json'), 'utf8'))).toMatchObject({
      origin: `context-guardian/${hostname().replace(/[^A-Za-z0-9._-]/g, '-')}/${LOG}`,
      released: true,
    });
  });

  it('two captures at once take the log in turns, and both are logged', async () => {
    const other = testIo({ home: root, dataDir, env: { CLAUDE_CONFIG_DIR: join(root, '.claude') } });
    const second = join(root, 'second.jsonl');
    const fx2 = new TranscriptFixture({ sessionId: 'second-session', cwd: root });
    fx2.user('A second session, captured at the same time').assistant('Both must be logged.');
    writeFileSync(second, fx2.takeText());
    other.setStdin(
      JSON.stringify({
        session_id: 'second-session',
        transcript_path: second,
        hook_event_name: 'SessionEnd',
      }),
    );
    io.setStdin(
      JSON.stringify({ session_id: SESSION, transcript_path: transcript, hook_event_name: 'SessionEnd' }),
    );
    expect(await Promise.all([main(['capture'], io), main(['capture'], other)])).toEqual([0, 0]);
    const report = await verifyLogs({ spanDir, verifiedDir: null });
    expect(report.ok).toBe(true);
    expect(report.logs).toEqual([expect.objectContaining({ log: LOG, size: 2, writer: 'released' })]);
    expect(await verifyArchive({ spanDir })).toMatchObject({ ok: true });
  });

  it('always exits 0 and prints nothing: bad stdin, missing transcript; problems go to the log', async () => {
    io.setStdin('not json');
    expect(await main(['capture'], io)).toBe(0);
    io.setStdin(
      JSON.stringify({
        session_id: SESSION,
        transcript_path: join(root, 'gone.jsonl'),
        hook_event_name: 'PreCompact',
      }),
    );
    expect(await main(['capture'], io)).toBe(0);
    expect(io.out()).toBe('');
    const log = readFileSync(join(dataDir, 'claude-code', 'hooks.log'), 'utf8')
      .trim()
      .split('\n');
    expect(log.map((l) => (JSON.parse(l) as { code: string }).code)).toEqual(['CC_BAD_HOOK_INPUT', 'ENOENT']);
    expect(readdirSync(root)).not.toContain('spans');
  });

  it('on PreCompact keeps a 0600 snapshot: genuine instructions, checklist, last text, tool calls', async () => {
    fx.command('/context')
      .user('Use vitest, not jest', { reminder: 'Todo list is empty. Do not mention this.' })
      .assistant('Plan:\n- [x] Read the login code\n- [ ] Fix the timeout\n- [ ] Update the docs')
      .tool('Edit', { file_path: 'src/login.ts', old_string: 'a', new_string: 'b' }, { text: 'ok' })
      .assistant('Fixed the timeout; next the docs.\n- [x] Fix the timeout');
    appendFileSync(transcript, fx.takeText());
    await capture('PreCompact');
    const file = join(dataDir, 'claude-code', 'snapshots', `${HASH}.json`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const { text } = JSON.parse(readFileSync(file, 'utf8')) as { text: string };
    expect(text).toContain('Fix the flaky login test in src/login.ts');
    expect(text).toContain('Use vitest, not jest');
    expect(text).not.toContain('system-reminder');
    expect(text).not.toContain('Todo list is empty');
    expect(text).not.toContain('/context');
    expect(text).toContain('- [x] Read the login code\n- [ ] Update the docs\n- [x] Fix the timeout');
    expect(text).toContain('## Last assistant text\nFixed the timeout; next the docs.');
    expect(text).toContain('- Read: src/login.ts\n- Bash: npm test -- login\n- Edit: src/login.ts');
  });
});
