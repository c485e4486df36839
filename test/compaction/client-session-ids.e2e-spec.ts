import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { sessionHash } from '@guardian/archive';

import { overBudgetChat, WINDOW_ENV } from '../dashboard/support';
import { fillSkeleton } from '../support/recordings';
import { startStack, type Stack } from '../support/stack';
import { eventually, getJson, type Json } from './support';

// Issue 28 item 1: Claude Code sends `x-claude-code-session-id` and Codex `session-id` (and `thread-id`) on every
// request, yet with no X-Guardian-Session configured `/guardian/usage?session=<that id>` was 404: every developer
// landed in a session derived from the prompt. The client's own id now names the session.

async function usageStatus(stack: Stack, session: string): Promise<number> {
  return (await getJson(`${stack.guardian.url}/guardian/usage?session=${encodeURIComponent(session)}`))
    .status;
}

async function sourceOf(stack: Stack, session: string): Promise<unknown> {
  return (await getJson(`${stack.guardian.url}/guardian/usage?session=${encodeURIComponent(session)}`)).body
    .session_source;
}

const found = (stack: Stack, session: string) =>
  eventually(async () => ((await usageStatus(stack, session)) === 200 ? true : undefined));

describe('sessions from the ids clients send', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: 8192 } });
  });
  afterAll(() => stack.close());

  it("keys Claude Code's x-claude-code-session-id, and two developers with one prompt stay apart", async () => {
    for (const id of ['cc-alice-1', 'cc-bob-1']) {
      const client = new Anthropic({
        baseURL: stack.guardian.url,
        apiKey: 'local',
        defaultHeaders: { 'x-claude-code-session-id': id },
      });
      await client.messages.create({
        model: 'stub-model',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'the same opener' }],
      });
    }
    await found(stack, 'cc-alice-1');
    await found(stack, 'cc-bob-1');
    expect(await sourceOf(stack, 'cc-alice-1')).toBe('x-claude-code-session-id');
    // The dashboard's session rows say it too.
    const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
    const rows = stats.sessions as { session_source: string | null }[];
    expect(rows.map((r) => r.session_source)).toContain('x-claude-code-session-id');
  });

  it("keys Codex's session-id, then its thread-id", async () => {
    const ask = (headers: Record<string, string>) =>
      new OpenAI({
        baseURL: stack.baseURL,
        apiKey: 'local',
        defaultHeaders: headers,
      }).chat.completions.create({
        model: 'stub-model',
        messages: [{ role: 'user', content: 'hello codex' }],
      });
    await ask({ 'session-id': 'codex-s-1', 'thread-id': 'codex-t-1' });
    await found(stack, 'codex-s-1');
    expect(await sourceOf(stack, 'codex-s-1')).toBe('session-id');
    expect(await usageStatus(stack, 'codex-t-1')).toBe(404);
    await ask({ 'thread-id': 'codex-t-2' });
    await found(stack, 'codex-t-2');
    expect(await sourceOf(stack, 'codex-t-2')).toBe('thread-id');
  });

  it('lets X-Guardian-Session win over a client id', async () => {
    const client = new OpenAI({
      baseURL: stack.baseURL,
      apiKey: 'local',
      defaultHeaders: { 'X-Guardian-Session': 'carol', 'session-id': 'codex-carol' },
    });
    await client.chat.completions.create({
      model: 'stub-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    await found(stack, 'carol');
    expect(await sourceOf(stack, 'carol')).toBe('x-guardian-session');
    expect(await usageStatus(stack, 'codex-carol')).toBe(404);
  });
});

describe('the compaction event says which header named the session', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ stub: { window: 8192 }, env: WINDOW_ENV });
  });
  afterAll(() => stack.close());

  it('x-guardian-session, a client id, or derived', async () => {
    const sent: [string, Record<string, string>, string][] = [
      ['guardian', { 'X-Guardian-Session': 'dana' }, 'x-guardian-session'],
      ['codex', { 'session-id': 'codex-compact-1' }, 'session-id'],
      ['opencode', { 'x-session-id': 'ses_compact_1' }, 'x-session-id'],
      ['none', {}, 'derived'],
    ];
    for (const [tag, headers] of sent) {
      const res = await fetch(`${stack.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer local', ...headers },
        body: overBudgetChat({ tag }),
      });
      expect([tag, res.status]).toEqual([tag, 200]);
      await res.arrayBuffer();
    }
    const events = (await getJson(`${stack.guardian.url}/guardian/events`)).body.events as Json[];
    const compactions = events.filter((e) => e.kind === 'compaction');
    expect(compactions.map((e) => e.session_source)).toEqual(sent.map(([, , source]) => source));
    // The event names the session by its hash, as it names every session: the client's id is hashed like the header.
    expect(compactions.slice(0, 3).map((e) => e.session)).toEqual(
      ['dana', 'codex-compact-1', 'ses_compact_1'].map((id) => sessionHash(id).slice(0, 8)),
    );
  });
});

/**
 * The first request each real client sent to a loopback recorder (credentials and host left out, every text replaced
 * by its length: test/works-with/support/report.ts), with the setting it ran under: docs/sessions.md, "Without the
 * header".
 */
interface ClientFixture {
  client: string;
  version: string;
  recorded_on: string;
  session_header: string | null;
  /** Set on a sub-agent's request: the header that names the sub-agent. */
  subagent_header?: string;
  request: { method: string; route: string; headers: Record<string, string>; body_skeleton: unknown };
}

const FIXTURES = join(__dirname, 'fixtures', 'client-session-ids');
const fixtures = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(FIXTURES, f), 'utf8')) as ClientFixture);

/** Sends the recorded request as the client sent it, with `id` in place of its session id, and reads the answer. */
async function replay(stack: Stack, fx: ClientFixture, id?: string): Promise<number> {
  // Hop-by-hop and transfer headers are fetch's own to set.
  const { connection: _c, 'accept-encoding': _e, ...headers } = fx.request.headers;
  if (fx.session_header !== null && id !== undefined) headers[fx.session_header] = id;
  if (fx.client === 'opencode' && id !== undefined) headers['x-session-affinity'] = id;
  const res = await fetch(`${stack.guardian.url}${fx.request.route}`, {
    method: fx.request.method,
    headers: { ...headers, authorization: 'Bearer local' },
    body: JSON.stringify(fillSkeleton(fx.request.body_skeleton)),
  });
  await res.text();
  return res.status;
}

describe('sessions from the ids real clients send, replayed from their recordings', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: 1_000_000 } });
  });
  afterAll(() => stack.close());

  it('has a recording of each client', () => {
    expect(fixtures.map((f) => `${f.client} ${f.version} ${f.session_header}`)).toEqual([
      'claude-code 2.1.197 x-claude-code-session-id',
      'opencode 1.18.33 x-session-id',
      'qwen-code 0.24.4 null',
      'qwen-code 0.24.4 session_id',
    ]);
  });

  it.each(
    fixtures
      .filter((f) => f.session_header !== null && !f.subagent_header)
      .map((f) => [f.client, f] as const),
  )("keys %s's own session id, and two developers with one request stay apart", async (_client, fx) => {
    const header = fx.session_header ?? '';
    // The recorded value itself names a session; so do two developers' ids on the same first request.
    expect(fx.request.headers[header]).toBeTruthy();
    for (const id of [`${fx.client}-alice`, `${fx.client}-bob`])
      expect(await replay(stack, fx, id)).toBe(200);
    await found(stack, `${fx.client}-alice`);
    await found(stack, `${fx.client}-bob`);
    expect(await sourceOf(stack, `${fx.client}-alice`)).toBe(header);
    expect(await sourceOf(stack, `${fx.client}-bob`)).toBe(header);
  });

  it("keeps Claude Code's recorded sub-agent request under its session, never as a person", async () => {
    const fx = fixtures.find((f) => f.subagent_header !== undefined);
    if (!fx) throw new Error('the recording of a Claude Code sub-agent request is missing');
    // The recorded sub-agent request carried its agent id beside the session id (run-clients.ts --client-ids).
    expect(fx.request.headers[fx.subagent_header!]).toBeTruthy();
    const id = 'cc-subagent-session-1';
    const main = new Anthropic({
      baseURL: stack.guardian.url,
      apiKey: 'local',
      defaultHeaders: { 'x-claude-code-session-id': id },
    });
    await main.messages.create({
      model: 'stub-model',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'the main conversation' }],
    });
    await found(stack, id);
    const usage = (await getJson(`${stack.guardian.url}/guardian/usage?session=${id}`)).body;
    const side = async () =>
      Number(
        /guardian_usage_side_requests_total\{kind="subagent"\} (\d+)/.exec(
          await (await fetch(`${stack.guardian.url}/metrics`)).text(),
        )?.[1] ?? 0,
      );
    const before = await side();
    expect(await replay(stack, fx, id)).toBe(200);
    // Counted as the session's sub-agent once its answer is followed; the session's usage stays the main one's.
    await eventually(async () => ((await side()) === before + 1 ? true : undefined));
    expect((await getJson(`${stack.guardian.url}/guardian/usage?session=${id}`)).body).toEqual(usage);
    const rows = (await getJson(`${stack.guardian.url}/guardian/stats`)).body.sessions as {
      name: string | null;
    }[];
    expect(rows.filter((r) => r.name === id)).toHaveLength(1);
  });

  it('derives the session when Qwen Code runs without the setting (it sends no id of its own)', async () => {
    const fx = fixtures.find((f) => f.client === 'qwen-code' && f.session_header === null);
    if (!fx) throw new Error('the recording of Qwen Code without the setting is missing');
    const before = await sessionRows(stack);
    expect(await replay(stack, fx)).toBe(200);
    const rows = await eventually(async () => {
      const now = await sessionRows(stack);
      return now.length > before.length ? now : undefined;
    });
    expect(rows.map((r) => r.session_source)).toContain('derived');
  });
});

async function sessionRows(stack: Stack): Promise<{ session_source: string | null }[]> {
  return (await getJson(`${stack.guardian.url}/guardian/stats`)).body.sessions as {
    session_source: string | null;
  }[];
}
