import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { main as statusline } from '../../apps/cli/src/statusline/main';
import { startStack, type Stack } from '../support/stack';
import { eventually, filler, getJson } from './support';

// Issue 21 item 6: a developer's usage and status line follow their main conversation, not the side requests their
// client sends beside it. The shapes are the ones the real clients sent through the works-with runner: Claude Code's
// `/context` (token counts as `max_tokens: 1` requests when the backend has no count_tokens) and its title request
// (no tools), OpenCode's title request (no tools) and Qwen Code's follow-up request (4 tools beside the main 11).

function tools(n: number): Anthropic.Tool[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `tool_${i}`,
    description: filler(100 + i, 40),
    input_schema: { type: 'object' as const, properties: { path: { type: 'string' } } },
  }));
}

function openaiTools(n: number): OpenAI.ChatCompletionTool[] {
  return tools(n).map((t) => ({
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: t.input_schema },
  }));
}

interface Usage {
  used_after_compaction: number;
  pct: number;
}

async function usageOf(stack: Stack, session: string): Promise<Usage | undefined> {
  const r = await getJson(`${stack.guardian.url}/guardian/usage?session=${encodeURIComponent(session)}`);
  return r.status === 200 ? (r.body as unknown as Usage) : undefined;
}

async function statusLine(stack: Stack, session: string): Promise<string> {
  const out: string[] = [];
  const io = { stdout: { write: (s: string) => out.push(s) }, stderr: { write: () => true }, env: {} };
  await statusline(['--url', stack.guardian.url, '--session', session], io);
  return out.join('').trim();
}

async function sideRequests(stack: Stack): Promise<number> {
  const text = await (await fetch(`${stack.guardian.url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^guardian_usage_side_requests_total\{kind="\w+"\} (\d+)$/gm))
    sum += Number(m[1]);
  return sum;
}

/**
 * Waits until guardian has booked `count` side requests in all, or until the session's usage moved away from
 * `before` (what the clobbering did), whichever comes first; the caller then asserts which it was.
 */
async function settled(
  stack: Stack,
  session: string,
  before: Usage,
  count: number,
): Promise<Usage | undefined> {
  return eventually(async () => {
    const now = await usageOf(stack, session);
    if (now?.used_after_compaction !== before.used_after_compaction)
      return now ?? { used_after_compaction: -1, pct: -1 };
    return (await sideRequests(stack)) >= count ? now : undefined;
  });
}

async function moved(stack: Stack, session: string, from?: Usage): Promise<Usage> {
  return eventually(async () => {
    const now = await usageOf(stack, session);
    return now && now.used_after_compaction !== from?.used_after_compaction ? now : undefined;
  });
}

describe('usage and the status line follow the main conversation', () => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: 65536, countTokensEndpoint: false } });
  });
  afterEach(async () => {
    await stack.close();
  });

  it("Claude Code: `/context` token counts and a title request leave alice's line as it was", async () => {
    // Claude Code streams its turns (the SDK refuses a non-streamed request for 32,000 output tokens).
    const claude = new Anthropic({
      baseURL: stack.guardian.url,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
      defaultHeaders: { 'X-Guardian-Session': 'alice' },
    });
    const system = `You are a coding agent.\n${filler(1, 400)}`;
    const history: Anthropic.MessageParam[] = [
      { role: 'user', content: `Look at this log:\n${filler(2, 3000)}` },
    ];
    await claude.messages
      .stream({
        model: 'stub-model',
        max_tokens: 32000,
        system,
        tools: tools(24),
        messages: history,
      })
      .finalMessage();
    const main = await moved(stack, 'alice');
    const line = await statusLine(stack, 'alice');

    // `/context`: one count per part (system, tools, messages), each as a 1-token generation.
    for (const [n, content] of [
      [0, system],
      [1, 'foo'],
      [8, 'foo'],
      [17, 'foo'],
    ] as const) {
      await claude.messages.create({
        model: 'stub-model',
        max_tokens: 1,
        messages: [{ role: 'user', content }],
        ...(n > 0 ? { tools: tools(n) } : {}),
      });
    }
    // The session title: no tools, the user's first message inside a short prompt.
    await claude.messages
      .stream({
        model: 'stub-model',
        max_tokens: 32000,
        system: 'Summarize this coding conversation in under 50 characters.',
        messages: [{ role: 'user', content: 'Look at this log' }],
      })
      .finalMessage();

    expect(await settled(stack, 'alice', main, 5)).toEqual(main);
    expect(await statusLine(stack, 'alice')).toBe(line);

    // The next turn of the conversation moves the line again, and a new conversation (after /clear) does too.
    history.push({ role: 'assistant', content: 'Read it.' }, { role: 'user', content: filler(3, 2000) });
    await claude.messages
      .stream({
        model: 'stub-model',
        max_tokens: 32000,
        system,
        tools: tools(24),
        messages: history,
      })
      .finalMessage();
    const next = await moved(stack, 'alice', main);
    expect(next.used_after_compaction).toBeGreaterThan(main.used_after_compaction);
    await claude.messages
      .stream({
        model: 'stub-model',
        max_tokens: 32000,
        system,
        tools: tools(24),
        messages: [{ role: 'user', content: 'hello again' }],
      })
      .finalMessage();
    expect((await moved(stack, 'alice', next)).used_after_compaction).toBeLessThan(
      main.used_after_compaction,
    );
  });

  it("OpenCode's title request and Qwen Code's follow-up request leave the line on the main request", async () => {
    const client = (session: string) =>
      new OpenAI({
        baseURL: stack.baseURL,
        apiKey: 'sk-test',
        maxRetries: 0,
        defaultHeaders: { 'X-Guardian-Session': session },
      });
    const opencode = client('bob');
    const user: OpenAI.ChatCompletionMessageParam = { role: 'user', content: `Here:\n${filler(4, 2500)}` };
    // OpenCode asks for the title first, so it is all bob's line can show until the main request is answered.
    await opencode.chat.completions.create({
      model: 'stub-model',
      max_tokens: 32000,
      messages: [{ role: 'system', content: 'You are a title generator.' }, user],
    });
    const title = await moved(stack, 'bob');
    await opencode.chat.completions.create({
      model: 'stub-model',
      max_tokens: 32000,
      tools: openaiTools(10),
      messages: [{ role: 'system', content: filler(5, 300) }, user],
    });
    const bob = await moved(stack, 'bob', title);
    expect(bob.used_after_compaction).toBeGreaterThan(title.used_after_compaction);

    const qwen = client('carol');
    const history: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: filler(6, 600) },
      user,
      { role: 'assistant', content: 'Read it.' },
      { role: 'user', content: 'And now?' },
    ];
    await qwen.chat.completions.create({
      model: 'stub-model',
      max_tokens: 8000,
      tools: openaiTools(11),
      messages: history,
    });
    const carol = await moved(stack, 'carol');
    const line = await statusLine(stack, 'carol');
    // Its follow-up request: the same history and one more message, a shorter system prompt and 4 tools.
    await qwen.chat.completions.create({
      model: 'stub-model',
      max_tokens: 8000,
      tools: openaiTools(4),
      messages: [
        { role: 'system', content: filler(7, 200) },
        ...history.slice(1),
        { role: 'assistant', content: 'Done.' },
        { role: 'user', content: 'Suggest what the user may ask next.' },
      ],
    });
    expect(await settled(stack, 'carol', carol, 1)).toEqual(carol);
    expect(await statusLine(stack, 'carol')).toBe(line);
    expect(await usageOf(stack, 'bob')).toEqual(bob);
  });
});
