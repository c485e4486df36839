import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { ownerHash, sessionHash } from '@guardian/archive';

import { chatAs, startTeamStack, TOKENS, type TeamStack } from './support';
import { until } from '../support/wait';

// Issue 15 item 1 (ARCHITECTURE.md#sessions, #access): a token names the owner of a request; with GUARDIAN_TOKEN_REQUIRED=1 a proxied
// request needs one; the session becomes `<owner>/<X-Guardian-Session>`, so one header value under two tokens is two
// sessions that share no summary, usage or run; and the token itself goes nowhere.

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else out.push(p);
  }
  return out;
}

describe('team mode on the proxied routes (GUARDIAN_TOKEN_REQUIRED=1)', () => {
  let stack: TeamStack;
  beforeAll(async () => {
    stack = await startTeamStack({ GUARDIAN_TOKEN_REQUIRED: '1' });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('answers a request without a token 401 in the route’s own error shape, a wrong token 403, and forwards neither', async () => {
    stack.stub.reset();
    const openai = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-upstream', maxRetries: 0 });
    const chat = await openai.chat.completions
      .create({ model: 'stub-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(chat).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((chat as InstanceType<typeof OpenAI.APIError>).code).toBe('GUARDIAN_TOKEN_REQUIRED');
    expect((chat as Error).message).toContain('X-Guardian-Token required');

    const responses = await openai.responses
      .create({ model: 'stub-model', input: 'hi' })
      .catch((e: unknown) => e);
    expect(responses).toBeInstanceOf(OpenAI.AuthenticationError);

    const anthropic = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-ant', maxRetries: 0 });
    const messages = await anthropic.messages
      .create({ model: 'stub-model', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(messages).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((messages as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error', code: 'GUARDIAN_TOKEN_REQUIRED' },
    });

    const wrong = new OpenAI({
      baseURL: stack.baseURL,
      apiKey: 'sk-upstream',
      maxRetries: 0,
      defaultHeaders: { 'X-Guardian-Token': `${TOKENS.alice}x` },
    });
    const refused = await wrong.models.list().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe('GUARDIAN_TOKEN_INVALID');

    // Every path is proxied, so every path is guarded: /v1/models too.
    const models = await fetch(`${stack.baseURL}/models`);
    expect([models.status, ((await models.json()) as any).error.code]).toEqual([
      401,
      'GUARDIAN_TOKEN_REQUIRED',
    ]);
    expect(stack.stub.requests).toEqual([]);
    // Except a HEAD, the connectivity probe clients send without their custom headers (Claude Code's HEAD /).
    const probe = await fetch(`${stack.guardian.url}/`, { method: 'HEAD' });
    expect(probe.status).not.toBe(401);
    expect(stack.stub.requests.map((r) => r.method)).toEqual(['HEAD']);
    stack.stub.reset();

    const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    expect(metrics).toMatch(/^guardian_access_refusals_total\{reason="token_required"\} [4-9]$/m);
    expect(metrics).toMatch(/^guardian_access_refusals_total\{reason="token_invalid"\} [1-9]$/m);

    const through = new OpenAI({
      baseURL: stack.baseURL,
      apiKey: 'sk-upstream',
      maxRetries: 0,
      defaultHeaders: { 'X-Guardian-Token': TOKENS.bob },
    });
    await expect(through.models.list()).resolves.toBeDefined();
  });

  it('keeps one X-Guardian-Session value apart per owner: no shared summary, usage or run', async () => {
    stack.stub.reset();
    const summaries = () => stack.stub.requests.filter((r) => r.isSummary).length;
    // The same conversation under the same header value, from two developers.
    expect((await chatAs(stack, 'alice', { session: 'laptop', tag: 'shared' })).status).toBe(200);
    const afterAlice = summaries();
    expect(afterAlice).toBeGreaterThan(0);
    expect((await chatAs(stack, 'bob', { session: 'laptop', tag: 'shared' })).status).toBe(200);
    // Bob's turn could not reuse alice's summary (the memo is keyed by owner and session): his stretch was summarised.
    expect(summaries()).toBe(2 * afterAlice);
    // Alice again: her own memo answers, no summariser call.
    expect((await chatAs(stack, 'alice', { session: 'laptop', tag: 'shared' })).status).toBe(200);
    expect(summaries()).toBe(2 * afterAlice);

    // .tlog holds the writers' logs (docs/ARCHIVE_FORMAT.md#the-log), not a run.
    const runs = (await readdir(join(stack.dataDir, 'spans'))).filter((r) => !r.startsWith('.'));
    const owners = await Promise.all(
      runs.map(
        async (r) =>
          JSON.parse(await readFile(join(stack.dataDir, 'spans', r, 'run.json'), 'utf8')).owner_hash,
      ),
    );
    expect(owners.sort()).toEqual([ownerHash('alice'), ownerHash('bob')].sort());
    // The compaction log is written behind the requests, its lines gathered for one fsync (ADR 0017): bob's line
    // may still be on its way when alice's memo hit has been answered, so it is read until both owners are in it.
    const logOwners = async () => {
      const [logFile] = await readdir(join(stack.dataDir, 'log'));
      const lines = (await readFile(join(stack.dataDir, 'log', logFile!), 'utf8')).trim().split('\n');
      return new Set(lines.map((l) => JSON.parse(l).owner_hash));
    };
    let seen = await logOwners();
    await until('both owners in the compaction log', async () => (seen = await logOwners()).size >= 2);
    expect(seen).toEqual(new Set([ownerHash('alice'), ownerHash('bob')]));

    // Each developer's usage is their own; the admin names the owner to look one up.
    const alice = await stack.get('/guardian/usage?session=laptop', 'alice');
    const bob = await stack.get('/guardian/usage?session=laptop', 'bob');
    expect([alice.status, bob.status]).toEqual([200, 200]);
    expect((await stack.get('/guardian/usage', 'alice')).body).toEqual(alice.body);
    expect((await stack.get('/guardian/usage?session=laptop&owner=bob', 'admin')).body).toEqual(bob.body);
    expect((await stack.get('/guardian/usage?session=laptop', 'admin')).status).toBe(404);
    // A developer cannot reach another's usage by naming them.
    expect((await stack.get('/guardian/usage?session=laptop&owner=bob', 'alice')).status).toBe(400);
  });

  it("keeps the owner prefix when a client's own session id names the session (issue 28 item 1)", async () => {
    stack.stub.reset();
    // One Claude Code session id from two developers (a copied transcript, a guessed id), no X-Guardian-Session.
    const id = 'cc-session-4b1e';
    const source = 'x-claude-code-session-id';
    for (const who of ['alice', 'bob'] as const)
      expect((await chatAs(stack, who, { tag: `cc-${who}`, headers: { [source]: id } })).status).toBe(200);
    // Bob's turn could not reuse alice's summary: each was summarised under its own owner's session.
    expect(stack.stub.requests.filter((r) => r.isSummary).length).toBeGreaterThanOrEqual(2);

    // Each developer finds their own session by the id their client sent; the id alone names no session.
    const alice = await stack.get(`/guardian/usage?session=${id}`, 'alice');
    const bob = await stack.get(`/guardian/usage?session=${id}`, 'bob');
    expect([alice.status, alice.body.session_source, bob.status, bob.body.session_source]).toEqual([
      200,
      source,
      200,
      source,
    ]);
    expect((await stack.get(`/guardian/usage?session=${id}&owner=alice`, 'admin')).body).toEqual(alice.body);
    expect((await stack.get(`/guardian/usage?session=${id}&owner=bob`, 'admin')).body).toEqual(bob.body);
    expect((await stack.get(`/guardian/usage?session=${id}`, 'admin')).status).toBe(404);

    // The archive: a run per owner, under the owner-scoped hash of the id.
    const scoped = { alice: sessionHash(id, 'alice'), bob: sessionHash(id, 'bob') };
    const runs = (await readdir(join(stack.dataDir, 'spans'))).filter((r) => !r.startsWith('.'));
    const byOwner: Record<string, string> = {};
    for (const r of runs) {
      const run = JSON.parse(await readFile(join(stack.dataDir, 'spans', r, 'run.json'), 'utf8')) as {
        session_hash: string;
        owner_hash: string;
      };
      if (run.session_hash === scoped.alice || run.session_hash === scoped.bob)
        byOwner[run.session_hash] = run.owner_hash;
    }
    expect(byOwner).toEqual({ [scoped.alice]: ownerHash('alice'), [scoped.bob]: ownerHash('bob') });

    // The compaction events say which header named each session, and whose it is.
    const events = (await stack.get('/guardian/events', 'admin')).body.events as Record<string, unknown>[];
    const compactions = events
      .filter((e) => e.kind === 'compaction')
      .filter((e) => e.session === scoped.alice.slice(0, 8) || e.session === scoped.bob.slice(0, 8))
      .map((e) => [e.session, e.session_source, e.owner_hash]);
    expect(compactions).toEqual([
      [scoped.alice.slice(0, 8), source, ownerHash('alice')],
      [scoped.bob.slice(0, 8), source, ownerHash('bob')],
    ]);
  });

  it('forwards, logs and stores the token nowhere', async () => {
    for (const who of ['alice', 'bob'] as const)
      await chatAs(stack, who, { session: 'leak', tag: `leak-${who}` });
    const forwarded = stack.stub.requests.map((r) => JSON.stringify(r.headers) + r.body.toString('utf8'));
    expect(forwarded.length).toBeGreaterThan(0);
    expect(stack.stub.requests.some((r) => r.isSummary)).toBe(true);
    for (const seen of forwarded) expect(seen).not.toMatch(/x-guardian-token/i);
    const endpoints = await Promise.all(
      ['/guardian/stats', '/guardian/events', '/metrics', '/readyz'].map(
        async (p) => (await stack.get(p, 'admin')).text,
      ),
    );
    const files = await filesUnder(stack.dataDir);
    // A log tile's temporary file may be renamed away between the listing and the read: it holds hashes only.
    const stored = await Promise.all(files.map((f) => readFile(f, 'utf8').catch(() => '')));
    expect(stored.length).toBeGreaterThan(3);
    const everything = [...forwarded, stack.logs(), ...endpoints, ...stored].join('\n');
    for (const [who, token] of Object.entries(TOKENS))
      expect([who, everything.includes(token)]).toEqual([who, false]);
    // The upstream's own credential did go upstream: that is where it belongs.
    expect(stack.stub.requests.some((r) => r.headers.authorization === 'Bearer sk-upstream-key')).toBe(true);
  });
});

describe('team mode without GUARDIAN_TOKEN_REQUIRED', () => {
  let stack: TeamStack;
  beforeAll(async () => {
    stack = await startTeamStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('serves a request without a token as before, but a header spelled like an owned session reaches no owner', async () => {
    stack.stub.reset();
    const summaries = () => stack.stub.requests.filter((r) => r.isSummary).length;
    expect((await chatAs(stack, 'alice', { session: 'laptop', tag: 'poison' })).status).toBe(200);
    const afterAlice = summaries();
    // No token, and the header names alice's session the way it is shown (`<owner>/<session>`): a session of its own.
    expect((await chatAs(stack, undefined, { session: 'alice/laptop', tag: 'poison' })).status).toBe(200);
    expect(summaries()).toBe(2 * afterAlice);
    expect((await stack.get('/guardian/usage?session=laptop', 'alice')).status).toBe(200);
    // A wrong token is refused even here: the developer learns it now, not when their sessions go missing.
    const wrong = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-guardian-token': 'tok-nobody-000000000000' },
      body: JSON.stringify({ model: 'stub-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect([wrong.status, ((await wrong.json()) as any).error.code]).toEqual([403, 'GUARDIAN_TOKEN_INVALID']);
  });
});
