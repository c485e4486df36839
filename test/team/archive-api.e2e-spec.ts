import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { ownerHash, sha256Hex } from '@guardian/archive';

import { startStack, type Stack } from '../support/stack';
import { chatAs, startTeamStack, TOKENS, type TeamStack } from './support';
import { until } from '../support/wait';

// Issue 15 item 2: the read-only recall API under /guardian/archive/*, scoped to the caller's token (admin: all),
// bounded, with stable codes and validated ids; and POST /guardian/capture for the Claude Code hooks.

const ENDPOINTS = [
  '/guardian/archive/runs',
  '/guardian/archive/digests',
  '/guardian/archive/search?term=zebra',
  '/guardian/archive/seal',
  '/guardian/archive/heads',
  '/guardian/archive/receipts',
  '/guardian/archive/savings',
];

describe('the recall API with two developers and an admin', () => {
  let stack: TeamStack;
  const runsOf: Record<'alice' | 'bob', string[]> = { alice: [], bob: [] };

  beforeAll(async () => {
    stack = await startTeamStack();
    for (const [who, session, marker] of [
      ['alice', 'laptop', 'ZEBRA-7431'],
      ['alice', 'desk', 'ZEBRA-7432'],
      ['bob', 'laptop', 'OKAPI-2210'],
    ] as const) {
      expect((await chatAs(stack, who, { session, tag: `${who}-${session}`, marker })).status).toBe(200);
    }
    const spanDir = join(stack.dataDir, 'spans');
    for (const run of await readdir(spanDir)) {
      if (run.startsWith('.')) continue; // .tlog: the writers' logs (docs/ARCHIVE_FORMAT.md#the-log)
      const owner = JSON.parse(await readFile(join(spanDir, run, 'run.json'), 'utf8')).owner_hash;
      if (owner === ownerHash('alice')) runsOf.alice.push(run);
      if (owner === ownerHash('bob')) runsOf.bob.push(run);
    }
    expect([runsOf.alice.length, runsOf.bob.length]).toEqual([2, 1]);
  });
  afterAll(async () => {
    await stack?.close();
  });

  it.each(ENDPOINTS)('%s: no token is 401, a wrong one 403, both with a stable code', async (path) => {
    const none = await stack.get(path);
    expect([none.status, none.body.error?.code]).toEqual([401, 'GUARDIAN_TOKEN_REQUIRED']);
    const wrong = await stack.get(path, `${TOKENS.bob}0`);
    expect([wrong.status, wrong.body.error?.code]).toEqual([403, 'GUARDIAN_TOKEN_INVALID']);
    expect((await stack.get(path, 'alice')).status).toBe(200);
  });

  it('lists each developer’s own runs, and every run to the admin', async () => {
    const list = async (who: 'alice' | 'bob' | 'admin') =>
      ((await stack.get('/guardian/archive/runs', who)).body.runs as { run: string }[])
        .map((r) => r.run)
        .sort();
    expect(await list('alice')).toEqual([...runsOf.alice].sort());
    expect(await list('bob')).toEqual(runsOf.bob);
    expect(await list('admin')).toEqual([...runsOf.alice, ...runsOf.bob].sort());
    const digests = (await stack.get('/guardian/archive/digests', 'bob')).body;
    expect(new Set(digests.entries.map((e: { run: string }) => e.run))).toEqual(new Set(runsOf.bob));
  });

  it('finds what each developer said and nothing of the other’s', async () => {
    const hits = async (who: 'alice' | 'bob' | 'admin', query: string) =>
      (await stack.get(`/guardian/archive/search?${query}`, who)).body;
    expect((await hits('alice', 'term=OKAPI-2210')).total).toBe(0);
    const bobs = await hits('bob', 'term=OKAPI-2210');
    expect(bobs.total).toBeGreaterThan(0);
    expect(bobs.complete).toBe(true);
    expect(bobs.hits.every((h: { run: string }) => runsOf.bob.includes(h.run))).toBe(true);
    expect((await hits('admin', 'term=OKAPI-2210')).total).toBe(bobs.total);
    // A raw session value names the caller's own session: "laptop" is alice's laptop for alice.
    const laptop = await hits('alice', 'term=ZEBRA&session=laptop');
    expect(new Set(laptop.hits.map((h: { snippet: string }) => /ZEBRA-743\d/.exec(h.snippet)?.[0]))).toEqual(
      new Set(['ZEBRA-7431']),
    );
  });

  it('answers another developer’s run exactly like a run that does not exist', async () => {
    const [aliceRun] = runsOf.alice;
    for (const path of [
      `/guardian/archive/runs/${aliceRun}/spans`,
      `/guardian/archive/runs/${aliceRun}/spans/1`,
      `/guardian/archive/digests?run=${aliceRun}`,
      `/guardian/archive/search?term=zebra&run=${aliceRun}`,
      `/guardian/archive/seal?run=${aliceRun}`,
    ]) {
      const theirs = await stack.get(path, 'bob');
      const missing = await stack.get(path.replace(aliceRun!, '20990101-000000-00000000-none'), 'bob');
      expect([path, theirs.status, theirs.body.error.code]).toEqual([path, 404, 'ARCHIVE_NOT_FOUND']);
      expect(theirs.body.error.message.replace(aliceRun!, 'X')).toBe(
        missing.body.error.message.replace('20990101-000000-00000000-none', 'X'),
      );
    }
  });

  it('reads a span or a message range, and refuses bad ids with 400 ARCHIVE_BAD_ID', async () => {
    const [run] = runsOf.bob;
    const spans = (await stack.get(`/guardian/archive/runs/${run}/spans`, 'bob')).body;
    expect(spans).toMatchObject({ run, next: null, spans: [{ span: 1, file: '0001.json' }] });
    const whole = (await stack.get(`/guardian/archive/runs/${run}/spans/0001.json`, 'bob')).body;
    expect(whole.text).toContain('OKAPI-2210');
    expect(whole.total_messages).toBeGreaterThan(2);
    const range = (await stack.get(`/guardian/archive/runs/${run}/spans/1?start=1&end=2`, 'bob')).body;
    expect(range.messages.map((m: { index: number }) => m.index)).toEqual([1, 2]);
    const cut = (await stack.get(`/guardian/archive/runs/${run}/spans/1?max_chars=200`, 'bob')).body;
    expect([cut.truncated, cut.text.length <= 200]).toEqual([true, true]);
    for (const path of [
      `/guardian/archive/runs/${run}/spans/..%2F..%2Fetc`,
      `/guardian/archive/runs/..%2F..%2Fetc/spans/1`,
      `/guardian/archive/runs/..%2F..%2Fetc/spans`,
      `/guardian/archive/runs/a.b/spans`,
      `/guardian/archive/digests?run=..%2Fx`,
      `/guardian/archive/runs/${run}/spans/-1`,
    ]) {
      const res = await stack.get(path, 'admin');
      expect([path, res.status, res.body.error?.code]).toEqual([path, 400, 'ARCHIVE_BAD_ID']);
    }
    const missingSpan = await stack.get(`/guardian/archive/runs/${run}/spans/9`, 'bob');
    expect([missingSpan.status, missingSpan.body.error.message]).toEqual([404, `no span ${run}/0009.json`]);
  });

  it('bounds every answer: pages with a cursor, caps, and a 400 for asking past them', async () => {
    const first = (await stack.get('/guardian/archive/runs?limit=2', 'admin')).body;
    expect(first.runs).toHaveLength(2);
    expect(first.next).toBe(first.runs[1].run);
    const second = (await stack.get(`/guardian/archive/runs?limit=2&after=${first.next}`, 'admin')).body;
    expect(second).toMatchObject({ next: null });
    expect(second.runs).toHaveLength(1);
    const seal = (await stack.get('/guardian/archive/seal?limit=1', 'admin')).body;
    expect([seal.runs.length, seal.next]).toEqual([1, seal.runs[0].run]);
    for (const path of [
      '/guardian/archive/search?term=zebra&max=1000',
      '/guardian/archive/runs?limit=0',
      '/guardian/archive/runs?limit=abc',
      '/guardian/archive/digests?max_tokens=100000',
      '/guardian/archive/search',
      '/guardian/archive/search?term=a&term=b',
    ]) {
      const res = await stack.get(path, 'admin');
      expect([path, res.status, res.body.error?.code]).toEqual([path, 400, 'ARCHIVE_BAD_OPTION']);
    }
    const badAge = await stack.get('/guardian/archive/savings?since=7y', 'alice');
    expect([badAge.status, badAge.body.error.code]).toEqual([400, 'ARCHIVE_BAD_AGE']);
  });

  it('verifies seals, and adds up savings and receipts per developer', async () => {
    const sealed = (await stack.get('/guardian/archive/seal', 'alice')).body;
    expect(sealed.ok).toBe(true);
    expect(sealed.runs.map((r: { run: string }) => r.run).sort()).toEqual([...runsOf.alice].sort());
    expect(
      (await stack.get('/guardian/archive/heads', 'bob')).body.heads.map((h: { run: string }) => h.run),
    ).toEqual(runsOf.bob);
  });
});

describe('savings and receipts per developer', () => {
  let stack: TeamStack;
  beforeAll(async () => {
    stack = await startTeamStack();
    await chatAs(stack, 'alice', { session: 's1', tag: 'savings-a' });
    await chatAs(stack, 'alice', { session: 's2', tag: 'savings-b' });
    await chatAs(stack, 'bob', { session: 's1', tag: 'savings-c' });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('counts each developer’s compactions and recalls, and everyone’s for the admin', async () => {
    // The log lines are written behind the answers: wait for all three.
    await until(
      'the three compaction log lines',
      async () => (await stack.get('/guardian/archive/savings?since=1d', 'admin')).body.compactions === 3,
    );
    const savings = async (who: 'alice' | 'bob' | 'admin') =>
      (await stack.get('/guardian/archive/savings?since=1d', who)).body.compactions;
    expect([await savings('alice'), await savings('bob'), await savings('admin')]).toEqual([2, 1, 3]);
    await stack.get('/guardian/archive/search?term=savings', 'bob');
    const bob = (await stack.get('/guardian/archive/receipts?since=1d', 'bob')).body;
    const alice = (await stack.get('/guardian/archive/receipts?since=1d', 'alice')).body;
    expect([bob.recall_calls, bob.runs, bob.compactions]).toEqual([1, 1, 1]);
    expect([alice.recall_calls, alice.runs, alice.compactions]).toEqual([0, 2, 2]);
  });
});

describe('POST /guardian/capture (the Claude Code hooks in team mode)', () => {
  let stack: TeamStack;
  beforeAll(async () => {
    stack = await startTeamStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  const post = async (who: 'alice' | 'bob' | undefined, body: unknown) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (who !== undefined) headers['x-guardian-token'] = TOKENS[who];
    const res = await fetch(`${stack.guardian.url}/guardian/capture`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const session = sha256Hex('claude-code-session-1');
  const line = (text: string) => ({ type: 'user', message: { role: 'user', content: text } });
  const bytes = (lines: unknown[]) =>
    lines.reduce<number>((n, l) => n + Buffer.byteLength(JSON.stringify(l)) + 1, 0);

  it('archives lines where the archive ends, in a run of the caller’s own, and says where it ends otherwise', async () => {
    const first = [line('the deploy key is in vault'), line('use pnpm')];
    const a1 = await post('alice', { session_hash: session, offset: 0, model: 'claude', lines: first });
    expect(a1.body).toMatchObject({ accepted: true, span: 1, archived_end: bytes(first) });
    expect(a1.body.run).toMatch(/^cc-[0-9a-f]{12}-[0-9a-f]{8}$/);
    // The same post again (a retried hook): nothing written, the end named.
    const again = await post('alice', { session_hash: session, offset: 0, model: 'claude', lines: first });
    expect(again.body).toEqual({ accepted: false, run: null, span: null, archived_end: bytes(first) });
    const next = [line('ship it friday')];
    const a2 = await post('alice', {
      session_hash: session,
      offset: bytes(first),
      model: 'claude',
      lines: next,
    });
    expect(a2.body).toMatchObject({ accepted: true, run: a1.body.run, span: 2 });
    // Bob posting the same session hash starts his own run at 0: alice's is out of his reach.
    const b1 = await post('bob', {
      session_hash: session,
      offset: 0,
      model: 'claude',
      lines: [line('bob here')],
    });
    expect(b1.body.accepted).toBe(true);
    expect(b1.body.run).not.toBe(a1.body.run);
    const read = await stack.get(`/guardian/archive/runs/${a1.body.run}/spans/2`, 'alice');
    expect(read.body.text).toContain('ship it friday');
    expect((await stack.get(`/guardian/archive/runs/${a1.body.run}/spans/2`, 'bob')).status).toBe(404);
    expect((await stack.get('/guardian/archive/seal', 'alice')).body.ok).toBe(true);
  });

  it('has a changed capture span found by the seal check of its chain line, not only by the 10-minute verify', async () => {
    const stamp = Date.now();
    let end = (
      await post('alice', { session_hash: session, offset: 0, model: 'claude', lines: [line('probe')] })
    ).body.archived_end as number;
    // A capture's chain line is checked on the monitor's next tick (every second): the span is changed straight after
    // the post, and if the check came first, the next post is changed instead. Each attempt waits for that check to
    // have run (its `seal_checked_at` moves), however long a busy machine takes, rather than for a fixed time.
    const checkedAt = async () =>
      (await stack.get('/guardian/stats', 'admin')).body.seal_checked_at as unknown;
    let status = '';
    for (let attempt = 0; attempt < 10 && status !== 'broken'; attempt++) {
      const before = await checkedAt();
      const text = `captured at ${stamp} attempt ${attempt}`;
      const a = await post('alice', {
        session_hash: session,
        offset: end,
        model: 'claude',
        lines: [line(text)],
      });
      expect(a.body.accepted).toBe(true);
      end = a.body.archived_end as number;
      const file = join(stack.dataDir, 'spans', a.body.run, `${String(a.body.span).padStart(4, '0')}.json`);
      // Changed in place, at the same length: the archive's end (where the next post goes) stays where it was.
      await writeFile(file, (await readFile(file, 'utf8')).replace(text, text.toUpperCase()));
      await until('the seal check of this capture', async () => (await checkedAt()) !== before);
      status = (await stack.get('/guardian/stats', 'admin')).body.seal_status as string;
    }
    expect(status).toBe('broken');
    // The receipts take the seal check's word: alice's capture run is the broken one, bob's is not.
    const receipts = async (who: 'alice' | 'bob') =>
      (await stack.get('/guardian/archive/receipts?since=24h', who)).body;
    expect(await receipts('alice')).toMatchObject({ runs: 1, runs_broken: 1 });
    expect(await receipts('bob')).toMatchObject({ runs: 1, runs_broken: 0 });
  });

  it('refuses a post without a token, and a body that is not a capture', async () => {
    expect((await post(undefined, { session_hash: session, offset: 0, model: 'x', lines: [1] })).status).toBe(
      401,
    );
    for (const body of [
      { session_hash: '../etc', offset: 0, model: 'x', lines: [1] },
      { session_hash: session, offset: -1, model: 'x', lines: [1] },
      { session_hash: session, offset: 0, model: 'x', lines: [] },
    ]) {
      const res = await post('alice', body);
      expect([res.status, res.body.error.code]).toEqual([400, 'GUARDIAN_BAD_CAPTURE']);
    }
  });
});

describe('the recall API without tokens', () => {
  const open: Stack[] = [];
  afterAll(async () => {
    for (const s of open) await s.close();
  });

  it('is open on a loopback bind (one person’s laptop), and closed beyond loopback', async () => {
    const laptop = await startStack();
    open.push(laptop);
    expect((await fetch(`${laptop.guardian.url}/guardian/archive/runs`)).status).toBe(200);
    const cluster = await startStack({ env: { GUARDIAN_HOST: '0.0.0.0' } });
    open.push(cluster);
    const port = new URL(cluster.guardian.url).port;
    const res = await fetch(`http://127.0.0.1:${port}/guardian/archive/runs`);
    const body = (await res.json()) as any;
    expect([res.status, body.error.code]).toEqual([401, 'GUARDIAN_TOKEN_REQUIRED']);
    expect(body.error.message).toContain('set GUARDIAN_TOKENS_FILE or GUARDIAN_ADMIN_TOKEN');
    // Metadata stays open there, as before (ARCHITECTURE.md#access).
    expect((await fetch(`http://127.0.0.1:${port}/guardian/stats`)).status).toBe(200);
  });
});
