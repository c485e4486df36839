import OpenAI from 'openai';

import { startStack, type Stack } from '../support/stack';

describe('transparent proxy', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  it('answers a chat completion through the sidecar with the upstream answer', async () => {
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test' });
    const res = await client.chat.completions.create({
      model: 'stub-model',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(res.choices[0]?.message.content).toContain('ok');
    expect(stack.stub.requests.at(-1)?.headers.authorization).toBe('Bearer sk-test');
  });
});

describe('body limit', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { GUARDIAN_MAX_BODY_BYTES: '2048' } });
  });
  afterAll(async () => {
    await stack.close();
  });

  it('refuses a body over GUARDIAN_MAX_BODY_BYTES with a 413 shaped like the route', async () => {
    const body = JSON.stringify({
      model: 'stub-model',
      messages: [{ role: 'user', content: 'x'.repeat(5000) }],
    });
    const openai = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(openai.status).toBe(413);
    expect(await openai.json()).toMatchObject({ error: { code: 'GUARDIAN_BODY_TOO_LARGE' } });
    const anthropic = await fetch(`${stack.baseURL}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(anthropic.status).toBe(413);
    expect(await anthropic.json()).toMatchObject({
      type: 'error',
      error: { type: 'request_too_large', code: 'GUARDIAN_BODY_TOO_LARGE' },
    });
    expect(stack.stub.requests).toHaveLength(0);
  });
});
