import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

import type { StubFlavor } from '@guardian/stub-backend';

import { startStack, type Stack } from '../support/stack';
import { filler, forwarded, getJson, postChat, summaryCalls } from './support';

/** The stub's real window is 4096; guardian is told 16384, so its estimate says "fits" and the stub rejects. */
const REAL_WINDOW = 4096;
const WRONG_ENV = { GUARDIAN_NUM_CTX: '16384', GUARDIAN_RESERVE_OUTPUT: '1024' };

/** Eight turns of notes, about 6,000 stub tokens: over the real window, far under guardian's believed budget. */
function chatHistory(): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You review migration notes.' }];
  for (let t = 1; t <= 8; t++) {
    out.push({ role: 'user', content: `Notes for step ${t}:\n${filler(t, 330)}` });
    out.push({ role: 'assistant', content: `Step ${t} reviewed; the ledger export is consistent.` });
  }
  out.push({ role: 'user', content: 'What should we check next?' });
  return out;
}

describe('overflow recovery: the upstream rejects what guardian thought fits', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it.each<StubFlavor>(['vllm', 'llamacpp', 'ollama', 'litellm'])(
    'recovers from the %s overflow body with exactly one compacted retry (chat, JSON and streamed)',
    async (flavor) => {
      stack = await startStack({ stub: { flavor, window: REAL_WINDOW }, env: WRONG_ENV });
      const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
      const messages = chatHistory();
      expect(stack.stub.countPrompt({ messages }, 'chat')).toBeGreaterThan(REAL_WINDOW);

      const res = await client.chat.completions.create({ model: 'stub-model', messages });
      expect(res.choices[0]?.message.content).toMatch(/^ok: /);
      const turn = forwarded(stack.stub);
      expect(turn.map((r) => r.status)).toEqual([400, 200]);
      expect(turn[1]!.promptTokens).toBeLessThanOrEqual(REAL_WINDOW);
      expect(summaryCalls(stack.stub).every((r) => r.status === 200)).toBe(true);

      // The same shape on a streamed request of a new conversation.
      stack.stub.reset();
      const streamed = [...messages.slice(0, -1), { role: 'user' as const, content: 'And after that?' }];
      streamed[1] = { role: 'user', content: `Other notes:\n${filler(99, 330)}` };
      const stream = await client.chat.completions.create({
        model: 'stub-model',
        messages: streamed,
        stream: true,
      });
      const parts: string[] = [];
      for await (const chunk of stream) parts.push(chunk.choices[0]?.delta.content ?? '');
      expect(parts.join('')).toMatch(/^ok: /);
      const streamedTurn = forwarded(stack.stub);
      expect(streamedTurn.length).toBeLessThanOrEqual(2);
      expect(streamedTurn.at(-1)!.status).toBe(200);

      const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
      expect(stats.overflow_recovered).toBeGreaterThanOrEqual(1);
      // A recovered overflow is counted once, as a compaction with reason "overflow", in both stats and metrics.
      const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
      const counted = (reason: string) =>
        Number(
          new RegExp(`^guardian_compactions_total\\{route="chat",reason="${reason}"\\} (\\d+)`, 'm').exec(
            metrics,
          )?.[1] ?? 0,
        );
      expect(counted('overflow')).toBe(stats.overflow_recovered);
      expect(counted('overflow') + counted('budget')).toBe(stats.compactions_performed);
    },
  );

  it('recovers from the Anthropic "prompt is too long" body on /v1/messages with one retry', async () => {
    stack = await startStack({ stub: { flavor: 'anthropic', window: REAL_WINDOW }, env: WRONG_ENV });
    const client = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-ant-test', maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [];
    for (let t = 1; t <= 8; t++) {
      messages.push({ role: 'user', content: `Notes for step ${t}:\n${filler(t, 330)}` });
      messages.push({ role: 'assistant', content: `Step ${t} reviewed.` });
    }
    messages.push({ role: 'user', content: 'What should we check next?' });
    const res = await client.messages.create({
      model: 'stub-model',
      max_tokens: 256,
      system: 'You review migration notes.',
      messages,
    });
    expect(res.content[0]?.type).toBe('text');
    const turn = forwarded(stack.stub);
    expect(turn.map((r) => r.status)).toEqual([400, 200]);
    expect(turn[1]!.promptTokens).toBeLessThanOrEqual(REAL_WINDOW);
  });

  it('returns the upstream own 400 body when the one retry is rejected too', async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: REAL_WINDOW }, env: WRONG_ENV });
    // A system prompt alone over the real window: system messages are never evicted, so no retry can fit.
    const messages = chatHistory();
    messages[0] = { role: 'system', content: `House rules:\n${filler(500, 2200)}` };
    const res = await postChat(stack.baseURL, { model: 'stub-model', messages });
    const sent = forwarded(stack.stub);
    expect(sent.map((r) => r.status)).toEqual([400, 400]);
    // The retry was compacted (a smaller request), and the client hears the stub's answer to it, not to the first.
    const retried = sent[1]!.promptTokens!;
    expect(retried).toBeLessThan(sent[0]!.promptTokens!);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        message:
          `This model's maximum context length is ${REAL_WINDOW} tokens. However, you requested ${retried} tokens ` +
          `(${retried} in the messages, 0 in the completion). Please reduce the length of the messages or completion.`,
        type: 'BadRequestError',
        param: 'input_tokens',
        code: 400,
      },
    });
  });
});

describe('a retry that could not shorten the request', () => {
  it('is not sent: the client hears the first refusal, and the failed recovery is counted', async () => {
    // Guardian believes 8,192; the stub's real window is 4,096. The house rules alone fill the budget the refusal
    // teaches (3,072), so the retry rebuilds the same request the first compaction made (issue 30 item 11: it was
    // sent again, byte for byte, and refused again).
    const stack = await startStack({
      stub: { flavor: 'vllm', window: REAL_WINDOW },
      env: { GUARDIAN_NUM_CTX: '6144', GUARDIAN_RESERVE_OUTPUT: '1024' },
    });
    try {
      const [, ...turns] = chatHistory();
      const messages: ChatCompletionMessageParam[] = [
        { role: 'system', content: `House rules:\n${filler(500, 2200)}` },
        ...turns.slice(0, 6),
        turns.at(-1)!,
      ];
      const res = await postChat(stack.baseURL, { model: 'stub-model', messages });
      const sent = forwarded(stack.stub);
      expect(res.status).toBe(400);
      expect(sent.map((r) => r.status)).toEqual([400]);
      const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
      expect(metrics).toMatch(/guardian_overflow_recoveries_total\{route="chat",outcome="failed"\} 1\b/);
      expect(metrics).toMatch(/guardian_fail_open_total\{stage="recovery"\} 1\b/);
    } finally {
      await stack.close();
    }
  });
});

/** Text the stub counts at one token per two characters, where guardian's estimate assumes 3.5: a dense paste. */
function densePaste(tokens: number): string {
  return Array.from({ length: tokens }, (_, i) => 'abcdefghij'[i % 10]).join(' ');
}

describe('an estimate that undercounts the kept tail', () => {
  // History the estimate counts right, then a paste the estimate undercounts by 1.75x and that the stub counts
  // at about 7,950 tokens (the facts block of ADR 0020 made 7,800 fit): compacted by the estimate to "fits", it is still over the stub's 8,192 window.
  function conversation(): ChatCompletionMessageParam[] {
    const out: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You review migration notes.' }];
    for (let t = 1; t <= 4; t++) {
      out.push({ role: 'user', content: `Notes for step ${t}:\n${filler(t, 330)}` });
      out.push({ role: 'assistant', content: `Step ${t} reviewed.` });
    }
    out.push({ role: 'user', content: `Here is the whole export:\n${densePaste(7950)}` });
    return out;
  }

  it('retries a rejected compacted request with the upstream count applied to what was forwarded', async () => {
    const stack = await startStack({
      stub: { flavor: 'vllm', window: 8192, tokenize: false },
      // The room rule (ADR 0021) would keep the paste alone, which the stub's window holds: the 4-message minimum
      // keeps the tail this test needs over the window.
      env: { GUARDIAN_RESERVE_OUTPUT: '1024', GUARDIAN_CUT_HEADROOM_TURNS: '0' },
    });
    try {
      const res = await postChat(stack.baseURL, { model: 'stub-model', messages: conversation() });
      expect(res.status).toBe(200);
      const sent = forwarded(stack.stub);
      expect(sent.map((r) => r.status)).toEqual([400, 200]);
      expect(sent[1]!.promptTokens).toBeLessThanOrEqual(8192);
    } finally {
      await stack.close();
    }
  });

  it('plans with the exact /tokenize count, so the compacted request fits on the first try', async () => {
    const stack = await startStack({
      stub: { flavor: 'vllm', window: 8192 },
      env: { GUARDIAN_RESERVE_OUTPUT: '1024' },
    });
    try {
      const res = await postChat(stack.baseURL, { model: 'stub-model', messages: conversation() });
      expect(res.status).toBe(200);
      expect(stack.stub.requests.filter((r) => r.route === 'tokenize')).toHaveLength(1);
      expect(forwarded(stack.stub).map((r) => r.status)).toEqual([200]);
    } finally {
      await stack.close();
    }
  });
});
