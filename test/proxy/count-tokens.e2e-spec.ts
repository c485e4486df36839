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

  it('answers /v1/messages/count_tokens itself when the backend has none, in Anthropic shape', async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: WINDOW, countTokensEndpoint: false },
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
      budget: String(BUDGET),
      window: String(WINDOW),
    });

    // Over the budget: the count is the whole conversation, and the header says guardian would compact it.
    const big = { model: 'stub-model', messages: history(12) };
    const over = await sdk.messages.countTokens(big).withResponse();
    expect(over.data.input_tokens).toBeGreaterThan(BUDGET);
    expect(wouldForward(over.response.headers.get('x-guardian-would-forward'))).toMatchObject({
      input_tokens: String(BUDGET),
      compacts: 'true',
    });
    // Nothing was generated and nothing summarised: a count is only a count.
    expect(stack.stub.requests.some((r) => r.route === 'messages' || r.isSummary)).toBe(false);
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
    const real = stack.stub.countPrompt({ model: 'stub-model', input }, 'responses');
    expect(data.input_tokens).toBeGreaterThan(real * 0.7);
    expect(data.input_tokens).toBeLessThan(real * 1.3);
    expect(wouldForward(response.headers.get('x-guardian-would-forward')).compacts).toBe('false');
  });
});
