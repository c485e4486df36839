import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { startStack, type Stack } from '../support/stack';
import { filler } from '../compaction/support';

// Issue 28 item 4: a token count answers on a backend without the endpoint, and says what guardian would forward.
const WINDOW = 6000;
const ENV = { GUARDIAN_NUM_CTX: String(WINDOW), GUARDIAN_RESERVE_OUTPUT: '1000', GUARDIAN_CALIBRATE: '0' };
const BUDGET = Math.min(Math.floor(WINDOW * 0.85), WINDOW - 1000);

function history(turns: number): Anthropic.MessageParam[] {
  const out: Anthropic.MessageParam[] = [];
  for (let t = 1; t <= turns; t++)
    out.push(
      { role: 'user', content: `Notes ${t}:\n${filler(t, 200)}` },
      { role: 'assistant', content: 'Noted.' },
    );
  out.push({ role: 'user', content: 'What next?' });
  return out;
}

/** `input_tokens=1; compacts=false; ...` as an object. */
function wouldForward(header: string | null): Record<string, string> {
  expect(header).not.toBeNull();
  return Object.fromEntries(header!.split('; ').map((kv) => kv.split('=') as [string, string]));
}

describe('token counts', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('answers /v1/messages/count_tokens from its estimate when the backend has neither it nor /tokenize', async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: WINDOW, countTokensEndpoint: false, tokenize: false },
      env: ENV,
    });
    const sdk = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-ant-test', maxRetries: 0 });
    const small = { model: 'stub-model', system: 'Be brief.', messages: history(2) };
    const { data, response } = await sdk.messages.countTokens(small).withResponse();
    // The stub served no count (404): guardian's estimate, within the estimate's usual error of the stub's count.
    expect(
      stack.stub.requests.filter((r) => r.path.startsWith('/v1/messages/count_tokens')).map((r) => r.status),
    ).toEqual([404]);
    const real = stack.stub.countPrompt(small, 'messages');
    expect(data.input_tokens).toBeGreaterThan(real * 0.7);
    expect(data.input_tokens).toBeLessThan(real * 1.3);
    expect(response.headers.get('x-guardian-count-source')).toBe('estimate');
    expect(wouldForward(response.headers.get('x-guardian-would-forward'))).toEqual({
      input_tokens: String(data.input_tokens),
      compacts: 'false',
      measure: 'none',
      budget: String(BUDGET),
      window: String(WINDOW),
    });

    // Over the budget: the count is the whole conversation, and the header says guardian would compact it, with a
    // summary not written yet (counted at its longest), to a request that fits.
    const big = { model: 'stub-model', messages: history(12) };
    const over = await sdk.messages.countTokens(big).withResponse();
    expect(over.data.input_tokens).toBeGreaterThan(BUDGET);
    const would = wouldForward(over.response.headers.get('x-guardian-would-forward'));
    expect(would).toMatchObject({ compacts: 'true', measure: 'summary_new' });
    expect(Number(would.input_tokens)).toBeLessThanOrEqual(BUDGET);
    // Nothing was generated and nothing summarised: a count is only a count.
    expect(stack.stub.requests.some((r) => r.route === 'messages' || r.isSummary)).toBe(false);
  });

  it.each(['vllm', 'llamacpp'] as const)(
    "answers /v1/messages/count_tokens exactly through a %s backend's /tokenize, tools included",
    async (flavor) => {
      stack = await startStack({ stub: { flavor, window: WINDOW, countTokensEndpoint: false }, env: ENV });
      const sdk = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-ant-test', maxRetries: 0 });
      const tools: Anthropic.Tool[] = [
        {
          name: 'read_file',
          description: filler(7, 40),
          input_schema: { type: 'object', properties: { path: { type: 'string' } } },
        },
      ];
      const small = { model: 'stub-model', system: 'Be brief.', tools, messages: history(2) };
      const { data, response } = await sdk.messages.countTokens(small).withResponse();
      expect(response.headers.get('x-guardian-count-source')).toBe('tokenize');
      expect(stack.stub.requests.filter((r) => r.path === '/tokenize').length).toBeGreaterThan(0);
      // The backend's own count of the conversation as its chat template renders it.
      const chat = {
        model: 'stub-model',
        tools: tools.map((t) => ({
          type: 'function',
          function: { name: t.name, parameters: t.input_schema, description: t.description },
        })),
        messages: [
          { role: 'system', content: 'Be brief.' },
          ...small.messages.map((m) => ({ role: m.role, content: m.content })),
        ],
      };
      // llama.cpp: its /tokenize of the prompt its /apply-template rendered; vLLM: its chat-template count.
      const tokenized = stack.stub.requests.filter((r) => r.path === '/tokenize').at(-1);
      expect(data.input_tokens).toBe(tokenized?.promptTokens);
      if (flavor === 'vllm') expect(data.input_tokens).toBe(stack.stub.countPrompt(chat, 'chat'));
      expect(wouldForward(response.headers.get('x-guardian-would-forward'))).toEqual({
        input_tokens: String(data.input_tokens),
        compacts: 'false',
        measure: 'none',
        budget: String(BUDGET),
        window: String(WINDOW),
      });
      // Over the budget by the exact count: the header says guardian would compact it to a request that fits.
      const over = await sdk.messages
        .countTokens({ model: 'stub-model', messages: history(12) })
        .withResponse();
      expect(over.response.headers.get('x-guardian-count-source')).toBe('tokenize');
      expect(over.data.input_tokens).toBeGreaterThan(BUDGET);
      const would = wouldForward(over.response.headers.get('x-guardian-would-forward'));
      expect(would).toMatchObject({ compacts: 'true', measure: 'summary_new' });
      expect(Number(would.input_tokens)).toBeLessThanOrEqual(BUDGET);
      expect(stack.stub.requests.some((r) => r.route === 'messages' || r.isSummary)).toBe(false);
    },
  );

  it('says what guardian would forward after compaction: at most what a new summary gives, exactly what a reused one does', async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: WINDOW, countTokensEndpoint: false, tokenize: false },
      env: ENV,
    });
    const sdk = new Anthropic({
      baseURL: stack.guardian.url,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
      defaultHeaders: { 'X-Guardian-Session': 'forecast' },
    });
    const big = { model: 'stub-model', system: 'You review migration notes.', messages: history(12) };
    const header = async () =>
      wouldForward(
        (await sdk.messages.countTokens(big).withResponse()).response.headers.get('x-guardian-would-forward'),
      );
    const summaries = () => stack!.stub.requests.filter((r) => r.isSummary).length;

    // No summary yet: the forecast counts the one to come at its longest.
    const before = await header();
    expect(before).toMatchObject({ compacts: 'true', measure: 'summary_new' });
    expect(summaries()).toBe(0);

    // The same conversation sent: guardian summarises and forwards it.
    await sdk.messages.create({ ...big, max_tokens: 64 });
    expect(summaries()).toBe(1);
    const events = (await (await fetch(`${stack.guardian.url}/guardian/events`)).json()) as {
      events: { kind: string; tokens_after?: number }[];
    };
    const sent = events.events.find((e) => e.kind === 'compaction')?.tokens_after;
    expect(sent).toBeDefined();
    // The forecast was an upper bound of what went.
    expect(sent!).toBeLessThanOrEqual(Number(before.input_tokens));

    // Now the summary is in the memo: the forecast is what guardian forwards with it, to the token, and costs no call.
    const after = await header();
    expect(after).toMatchObject({ compacts: 'true', measure: 'summary_reused', input_tokens: String(sent) });
    expect(summaries()).toBe(1);
    await sdk.messages.create({ ...big, max_tokens: 64 });
    const reused = (
      (await (await fetch(`${stack.guardian.url}/guardian/events`)).json()) as {
        events: { kind: string; tokens_after?: number; summary_reused?: boolean }[];
      }
    ).events.filter((e) => e.kind === 'compaction');
    expect(reused.map((e) => [e.summary_reused, e.tokens_after])).toEqual([
      [false, sent],
      [true, sent],
    ]);
  });

  it("passes the upstream's own count through when it has the endpoint, with the header added", async () => {
    stack = await startStack({ stub: { flavor: 'anthropic', window: WINDOW }, env: ENV });
    const sdk = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-ant-test', maxRetries: 0 });
    const body = { model: 'stub-model', messages: history(3) };
    const { data, response } = await sdk.messages.countTokens(body).withResponse();
    const counted = stack.stub.requests.filter((r) => r.route === 'count_tokens');
    expect(counted.length).toBeGreaterThanOrEqual(1);
    expect(data.input_tokens).toBe(stack.stub.countPrompt(body, 'messages'));
    expect(response.headers.get('x-guardian-count-source')).toBeNull();
    expect(wouldForward(response.headers.get('x-guardian-would-forward')).compacts).toBe('false');
  });

  it('answers the OpenAI equivalent, POST /v1/responses/input_tokens, through the openai SDK', async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: WINDOW }, env: ENV });
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    const input = history(2).map((m) => ({ role: m.role, content: m.content as string }));
    const { data, response } = await client.responses.inputTokens
      .count({ model: 'stub-model', input })
      .withResponse();
    expect(data.object).toBe('response.input_tokens');
    // vLLM has /tokenize: exact, the conversation as its chat template renders it.
    expect(response.headers.get('x-guardian-count-source')).toBe('tokenize');
    expect(data.input_tokens).toBe(stack.stub.countPrompt({ model: 'stub-model', messages: input }, 'chat'));
    expect(wouldForward(response.headers.get('x-guardian-would-forward')).compacts).toBe('false');
  });

  it('answers /v1/responses/input_tokens from its estimate on a backend without /tokenize', async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: WINDOW, tokenize: false }, env: ENV });
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    const input = history(2).map((m) => ({ role: m.role, content: m.content as string }));
    const { data, response } = await client.responses.inputTokens
      .count({ model: 'stub-model', input })
      .withResponse();
    expect(response.headers.get('x-guardian-count-source')).toBe('estimate');
    const real = stack.stub.countPrompt({ model: 'stub-model', input }, 'responses');
    expect(data.input_tokens).toBeGreaterThan(real * 0.7);
    expect(data.input_tokens).toBeLessThan(real * 1.3);
    expect(wouldForward(response.headers.get('x-guardian-would-forward')).input_tokens).toBe(
      String(data.input_tokens),
    );
  });
});
