import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { runSessionName } from './archive-reader';
import type { SpanInput } from './archive-writer';
import { CaptureJournal } from './capture-journal';
import { SealedArchive } from './sealed-archive';
import { verifyRun } from './verify';

const SESSION = '0123456789abcdef'.repeat(4);

function input(over: Partial<SpanInput> = {}): SpanInput {
  return {
    kind: 'compaction',
    sessionHash: SESSION,
    ownerHash: 'f'.repeat(64),
    route: 'chat',
    model: 'demo',
    messages: [
      { role: 'user', content: 'Keep the port at 8786.' },
      { role: 'assistant', content: 'Noted.' },
    ],
    firstIndex: 1,
    summary: 'The user fixed the port. Later they asked about TLS.',
    tokensBefore: 9000,
    tokensAfter: 3000,
    at: new Date('2026-10-30T14:30:12.345Z'),
    ...over,
  };
}

describe('SealedArchive', () => {
  let root: string;
  let spanDir: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'sealed-'));
    spanDir = join(root, 'spans');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('places spans at once and seals them together: chain, anchor and index lines for every one', async () => {
    const anchorDir = join(root, 'anchor');
    const archive = new SealedArchive({ spanDir, anchorDir, keepSpans: 100, replica: 'aaaa1111' });
    // What a request waits for: each span in place with its chain line; the commit follows (ADR 0013).
    const placed = [];
    for (let i = 0; i < 5; i++) placed.push(await archive.place(input({ summary: `Span ${i}.` })));
    expect(placed.map((p) => p.span)).toEqual([1, 2, 3, 4, 5]);
    const run = placed[0]!.run;
    const chainNow = readFileSync(join(spanDir, run, 'chain.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(chainNow).toHaveLength(5);
    await Promise.all(placed.map((p) => p.sealed));
    const lines = (file: string) => readFileSync(file, 'utf8').trim().split('\n');
    expect(lines(join(anchorDir, `${run}.jsonl`))).toHaveLength(5);
    expect(lines(join(spanDir, run, 'index.jsonl'))).toHaveLength(5);
    expect((await verifyRun({ spanDir, run, anchorDir })).break).toBeNull();
    expect(archive.takeSealed()).toEqual([expect.objectContaining({ run, seq: 5 })]);
  });

  it('writes one run per session with run.json, numbered spans, a chain line and a digest line each', async () => {
    const now = () => new Date('2026-10-30T14:30:12Z');
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'abcd1234', now });
    const first = await archive.write(input());
    const second = await archive.write(input({ kind: 'continuation', continues: first.ref }));
    expect(first).toEqual({
      run: '20261030-143012-01234567-abcd1234',
      span: 1,
      ref: '20261030-143012-01234567-abcd1234/0001.json',
    });
    expect(second.ref).toBe('20261030-143012-01234567-abcd1234/0002.json');
    const dir = join(spanDir, first.run);
    expect(JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'))).toEqual({
      run: first.run,
      session_hash: SESSION,
      owner_hash: 'f'.repeat(64),
      replica: 'abcd1234',
      started_at: '2026-10-30T14:30:12.000Z',
    });
    const span = JSON.parse(readFileSync(join(dir, '0002.json'), 'utf8'));
    expect(span).toMatchObject({
      format: 1,
      kind: 'continuation',
      span: 2,
      continues: first.ref,
      created_at: '2026-10-30T14:30:12.345Z',
      first_index: 1,
      message_count: 2,
      oversized: false,
      tokens_before: 9000,
      tokens_after: 3000,
    });
    expect(span.messages[0]).toEqual({ role: 'user', content: 'Keep the port at 8786.' });
    const index = readFileSync(join(dir, 'index.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(index[0]).toMatchObject({ span: 1, kind: 'compaction', digest: 'The user fixed the port.' });
    expect(readFileSync(join(dir, 'chain.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, '0001.json')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'chain.jsonl')).mode & 0o777).toBe(0o600);
  });

  it("keeps the session's name in run.json (0600, beside its text): bounded, and read back for that session only", async () => {
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'abcd1234' });
    const owner = 'f'.repeat(64);
    const named = await archive.write(input({ sessionName: 'alice-1 "quoted" <b>' }));
    const long = await archive.write(input({ sessionHash: 'b'.repeat(64), sessionName: 'x'.repeat(257) }));
    const derived = await archive.write(input({ sessionHash: 'c'.repeat(64) }));
    const runJson = (run: string) => join(spanDir, run, 'run.json');
    expect(JSON.parse(readFileSync(runJson(named.run), 'utf8')).session_name).toBe('alice-1 "quoted" <b>');
    expect(statSync(runJson(named.run)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(runJson(long.run), 'utf8'))).not.toHaveProperty('session_name');
    expect(JSON.parse(readFileSync(runJson(derived.run), 'utf8'))).not.toHaveProperty('session_name');

    const nameOf = (run: string, sessionHash: string, ownerHash: string | null) =>
      runSessionName(spanDir, run, { sessionHash, ownerHash });
    expect(await nameOf(named.run, SESSION, owner)).toBe('alice-1 "quoted" <b>');
    // Asked for another session, or the same session under another owner (or none), the run names nothing.
    expect(await nameOf(named.run, 'b'.repeat(64), owner)).toBeNull();
    expect(await nameOf(named.run, SESSION, 'e'.repeat(64))).toBeNull();
    expect(await nameOf(named.run, SESSION, null)).toBeNull();
    expect(await nameOf(derived.run, 'c'.repeat(64), owner)).toBeNull();
    expect(await nameOf('20200101-000000-00000000-gone', SESSION, owner)).toBeNull();
    // A hand-edited run.json with a name that is not a string, or too long, names nothing and stays readable.
    const edited = JSON.parse(readFileSync(runJson(long.run), 'utf8'));
    writeFileSync(runJson(long.run), JSON.stringify({ ...edited, session_name: 42 }));
    expect(await nameOf(long.run, 'b'.repeat(64), owner)).toBeNull();
    writeFileSync(runJson(long.run), JSON.stringify({ ...edited, session_name: 'é'.repeat(129) }));
    expect(await nameOf(long.run, 'b'.repeat(64), owner)).toBeNull();
  });

  it('names a run made by the capture journal too', async () => {
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'abcd1234' });
    const journal = new CaptureJournal({ archive, maxSessions: 10 });
    await journal.record({
      sessionHash: SESSION,
      sessionName: 'laptop',
      messages: [{ role: 'user', content: 'hello' }],
      at: new Date(),
    });
    await archive.close();
    const [run] = readdirSync(spanDir).filter((n) => !n.startsWith('.'));
    expect(await runSessionName(spanDir, run!, { sessionHash: SESSION, ownerHash: null })).toBe('laptop');
  });

  it('keeps sessions in separate runs and appends every head to the anchor', async () => {
    const anchorDir = join(root, 'anchor');
    const archive = new SealedArchive({ spanDir, anchorDir, keepSpans: 500, replica: 'r2' });
    const a = await archive.write(input());
    const b = await archive.write(input({ sessionHash: 'b'.repeat(64) }));
    await archive.write(input());
    expect(a.run).not.toBe(b.run);
    const anchor = readFileSync(join(anchorDir, `${a.run}.jsonl`), 'utf8')
      .trim()
      .split('\n');
    const chain = readFileSync(join(spanDir, a.run, 'chain.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(anchor.map((l) => JSON.parse(l))).toEqual(
      chain.map((l) => ({ seq: JSON.parse(l).seq, head: JSON.parse(l).hash })),
    );
  });

  it('serialises concurrent writes to one run: numbers 1..n, one chain, verifies OK', async () => {
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'r3' });
    const refs = await Promise.all(Array.from({ length: 20 }, () => archive.write(input())));
    expect(refs.map((r) => r.span).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    expect((await verifyRun({ spanDir, run: refs[0]!.run })).status).toBe('ok');
  });

  it('throws ARCHIVE_WRITE_FAILED when the volume cannot be written, and works once it can', async () => {
    writeFileSync(join(root, 'blocked'), 'a file where a folder should be');
    const blocked = new SealedArchive({
      spanDir: join(root, 'blocked', 'spans'),
      keepSpans: 500,
      replica: 'r4',
    });
    await expect(blocked.write(input())).rejects.toMatchObject({ code: 'ARCHIVE_WRITE_FAILED' });
    rmSync(join(root, 'blocked'));
    await expect(blocked.write(input())).resolves.toMatchObject({ span: 1 });
  });

  it('capture journal: appends only new messages, closes segments at the size limit, seals them', async () => {
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'r5', journalSegmentBytes: 300 });
    const journal = new CaptureJournal({ archive });
    const history = [
      { role: 'user', content: 'first question about the deployment' },
      { role: 'assistant', content: 'first answer' },
    ];
    expect(await journal.record({ sessionHash: SESSION, messages: history, at: new Date() })).toBe(2);
    history.push({ role: 'user', content: 'second question, a long one '.repeat(10) });
    expect(await journal.record({ sessionHash: SESSION, messages: history, at: new Date() })).toBe(1);
    await journal.close();
    const run = (await archive.runFor(SESSION))!;
    const files = readdirSync(join(spanDir, run)).filter((f) => f.startsWith('journal-'));
    expect(files).toEqual(['journal-0001.jsonl']);
    const lines = readFileSync(join(spanDir, run, 'journal-0001.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(lines.map((l) => JSON.parse(l).n)).toEqual([0, 1, 2]);
    const chain = readFileSync(join(spanDir, run, 'chain.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(JSON.parse(chain[0]!)).toMatchObject({ kind: 'journal', file: 'journal-0001.jsonl' });
    expect((await verifyRun({ spanDir, run })).status).toBe('ok');
  });

  it('capture journal: past maxSessions forgets the session recorded least recently, not a busy one', async () => {
    const archive = new SealedArchive({ spanDir, keepSpans: 500, replica: 'r6' });
    const journal = new CaptureJournal({ archive, maxSessions: 2 });
    const [busy, idle, late] = ['a'.repeat(64), 'b'.repeat(64), 'c'.repeat(64)] as const;
    const history = [{ role: 'user', content: 'a question' }];
    const record = (sessionHash: string) =>
      journal.record({ sessionHash, messages: history, at: new Date() });
    expect(await record(busy)).toBe(1);
    expect(await record(idle)).toBe(1);
    expect(await record(busy)).toBe(0);
    expect(await record(late)).toBe(1);
    // The busy session is still known: its resent history is not appended again; the idle one was forgotten.
    expect(await record(busy)).toBe(0);
    expect(await record(idle)).toBe(1);
    await journal.close();
  });
});
