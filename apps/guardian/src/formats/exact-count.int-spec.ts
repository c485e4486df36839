import { startStub, type StubBackend } from '@guardian/stub-backend';
import { UpstreamClient } from '@guardian/upstream';

import { anthropicAdapter } from './anthropic.adapter';
import { chatAdapter } from './chat.adapter';
import { countExactly } from './exact-count';
import type { ParsedConversation } from './format-adapter';

const body = {
  model: 'stub-model',
  max_tokens: 1024,
  stream: true,
  metadata: { user_id: 'u' },
  system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
  tools: [{ name: 'Read', description: 'Read a file from the workspace', input_schema: { type: 'object' } }],
  messages: [
    { role: 'user', content: 'Open the parser please.' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: { path: 'a.ts' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'export const a = 1;' }] },
  ],
};

function parsed(): ParsedConversation {
  const conv = anthropicAdapter.parse(body, { countTools: true });
  if (!conv) throw new Error('expected the request to parse');
  return conv;
}

describe('countExactly against a real upstream', () => {
  let stub: StubBackend;
  let upstream: UpstreamClient;
  const io = () => ({
    upstream,
    basePath: '/v1',
    headers: { 'x-api-key': 'sk-ant-k', 'anthropic-version': '2023-06-01', 'anthropic-beta': 'b1,b2' },
    timeoutMs: 60_000, // a hang guard where the count must come; the give-up case sets 50 ms against a slow stub
  });

  beforeAll(async () => {
    stub = await startStub({ flavor: 'anthropic' });
    upstream = new UpstreamClient({ origin: stub.url, timeoutSeconds: 120, connectTimeoutSeconds: 60 });
  });
  afterAll(async () => {
    await upstream.close();
    await stub.close();
  });
  beforeEach(() => stub.reset());

  it('gets the count the upstream enforces, asking /v1/messages/count_tokens with the client credentials', async () => {
    const exact = await countExactly(anthropicAdapter, parsed(), io());
    expect(exact).toBe(stub.countPrompt(body, 'messages'));
    const rec = stub.requests.at(-1)!;
    expect(rec).toMatchObject({
      method: 'POST',
      path: '/v1/messages/count_tokens',
      route: 'count_tokens',
      status: 200,
    });
    expect(rec.headers).toMatchObject({
      'x-api-key': 'sk-ant-k',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'b1,b2',
    });
    const sent = rec.json as Record<string, unknown>;
    expect(sent.max_tokens).toBeUndefined();
    expect(sent.stream).toBeUndefined();
    expect(sent.metadata).toBeUndefined();
    expect(sent.messages).toEqual(body.messages);
  });

  it('is undefined for a format without a count endpoint, sending nothing', async () => {
    const conv = chatAdapter.parse(
      { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
      { countTools: true },
    )!;
    expect(await countExactly(chatAdapter, conv, io())).toBeUndefined();
    expect(stub.requests).toHaveLength(0);
  });

  it('is undefined when the upstream has no such endpoint or answers too slowly', async () => {
    const bare = await startStub({ flavor: 'vllm', countTokensEndpoint: false });
    const slow = await startStub({ flavor: 'anthropic', latencyMs: 400 });
    const bareClient = new UpstreamClient({ origin: bare.url, timeoutSeconds: 5, connectTimeoutSeconds: 2 });
    const slowClient = new UpstreamClient({ origin: slow.url, timeoutSeconds: 5, connectTimeoutSeconds: 2 });
    try {
      expect(
        await countExactly(anthropicAdapter, parsed(), { ...io(), upstream: bareClient }),
      ).toBeUndefined();
      expect(bare.requests.at(-1)?.status).toBe(404);
      const late = await countExactly(anthropicAdapter, parsed(), {
        ...io(),
        upstream: slowClient,
        timeoutMs: 50,
      });
      expect(late).toBeUndefined();
    } finally {
      await bareClient.close();
      await slowClient.close();
      await bare.close();
      await slow.close();
    }
  });
});
