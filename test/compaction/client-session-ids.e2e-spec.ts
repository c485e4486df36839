import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { startStack, type Stack } from '../support/stack';
import { eventually, getJson } from './support';

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
