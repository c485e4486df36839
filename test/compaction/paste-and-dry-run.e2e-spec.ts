import { join } from 'node:path';

import OpenAI from 'openai';

import { startStack, type Stack } from '../support/stack';
import {
  filler,
  forwarded,
  postChat,
  readLog,
  readSpans,
  summaryCalls,
  textOf,
  messagesOf,
  type Json,
} from './support';
import { until } from '../support/wait';

const ENV = { GUARDIAN_RESERVE_OUTPUT: '1024' };

describe('a first message bigger than the window (big paste)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: 8192 }, env: ENV });
  });
  afterAll(async () => {
    await stack.close();
  });

  it('archives it once as an oversized span and forwards head + pointer + tail that fits', async () => {
    const paste = `BEGIN-OF-PASTE\n${filler(7, 5200)}\nEND-OF-PASTE`;
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    const history: { role: 'system' | 'user' | 'assistant'; content: string }[] = [
      { role: 'system', content: 'You review logs.' },
      { role: 'user', content: paste },
    ];
    expect(stack.stub.countPrompt({ messages: history }, 'chat')).toBeGreaterThan(stack.stub.window);

    const first = await client.chat.completions.create({ model: 'stub-model', messages: history });
    expect(first.choices[0]?.message.content).toMatch(/^ok: /);
    const spans = await readSpans(join(stack.dataDir, 'spans'));
    expect(spans).toHaveLength(1);
    const span = spans[0]!;
    expect(span.oversized).toBe(true);
    expect(span.original_tokens).toBeGreaterThan(0);
    expect(span.messages).toEqual([history[1]]);

    const sent = forwarded(stack.stub);
    expect(sent.map((r) => r.status)).toEqual([200]);
    expect(sent[0]!.promptTokens).toBeLessThanOrEqual(stack.stub.window);
    const text = textOf(messagesOf(sent[0]!)[1]!);
    expect(text.startsWith('BEGIN-OF-PASTE\n')).toBe(true);
    expect(text.endsWith('END-OF-PASTE')).toBe(true);
    const pointer = text.split('\n').filter((l) => l.startsWith('[context-guardian: message '));
    expect(pointer).toHaveLength(1);
    expect(pointer[0]).toMatch(
      new RegExp(
        `^\\[context-guardian: message 2 \\(${span.original_tokens} tokens\\) archived as ${span.ref.replace(/[./]/g, '\\$&')} -- the middle \\d+ tokens are omitted; with the recall MCP server, search_spans/read_span open the full text\\]$`,
      ),
    );
    expect(summaryCalls(stack.stub)).toHaveLength(0);

    // The next turn resends the same paste: it is cut again, but not archived again.
    history.push({ role: 'assistant', content: first.choices[0]!.message.content ?? '' });
    history.push({ role: 'user', content: 'What failed first?' });
    const second = await client.chat.completions.create({ model: 'stub-model', messages: history });
    expect(second.choices[0]?.message.content).toMatch(/^ok: /);
    const after = await readSpans(join(stack.dataDir, 'spans'));
    const holding = after.filter((s) => s.messages.some((m) => JSON.stringify(m).includes('BEGIN-OF-PASTE')));
    expect(holding.map((s) => s.ref)).toEqual([span.ref]);
    const turn2 = forwarded(stack.stub)[1]!;
    expect(turn2.status).toBe(200);
    expect(turn2.promptTokens).toBeLessThanOrEqual(stack.stub.window);
    // Whether the paste is cut again or summarised away, the request points at its one span.
    expect(JSON.stringify(turn2.json)).toContain(span.ref);
  });
});

/** About 7,500 stub tokens: over the 6,963-token budget, under the 8,192 window, so the stub accepts it as sent. */
function overBudget(seed: number): Json[] {
  const out: Json[] = [{ role: 'system', content: 'You review migration notes.' }];
  for (let t = 1; t <= 11; t++) {
    out.push({ role: 'user', content: `Notes ${seed}.${t}:\n${filler(seed * 100 + t, 330)}` });
    out.push({ role: 'assistant', content: `Reviewed ${t}.` });
  }
  out.push({ role: 'user', content: 'What next?' });
  return out;
}

describe('dry run', () => {
  async function dryRunCase(opts: { env?: Record<string, string>; headers?: Record<string, string> }) {
    const stack = await startStack({ stub: { flavor: 'vllm', window: 8192 }, env: { ...ENV, ...opts.env } });
    try {
      const bytes = JSON.stringify({ model: 'stub-model', messages: overBudget(5) });
      const res = await postChat(stack.baseURL, bytes, opts.headers);
      expect(res.status).toBe(200);
      const sent = forwarded(stack.stub);
      expect(sent).toHaveLength(1);
      expect(sent[0]!.body.toString('utf8')).toBe(bytes);
      expect(summaryCalls(stack.stub)).toHaveLength(0);
      expect(await readSpans(join(stack.dataDir, 'spans'))).toEqual([]);
      // The log line is written behind the request: wait for it.
      let log = await readLog(stack.dataDir);
      await until('the log line', async () => (log = await readLog(stack.dataDir)).length > 0);
      expect(log).toHaveLength(1);
      expect(log[0]).toMatchObject({ dry_run: true, run: null, span: null });
      expect(log[0]!.tokens_before as number).toBeGreaterThan(0);
    } finally {
      await stack.close();
    }
  }

  it('with GUARDIAN_DRY_RUN=1 forwards unchanged, writes no span and logs dry_run true', async () => {
    await dryRunCase({ env: { GUARDIAN_DRY_RUN: '1' } });
  });

  it('with the X-Guardian-Dry-Run: 1 header does the same for that request', async () => {
    await dryRunCase({ headers: { 'x-guardian-dry-run': '1' } });
  });
});
