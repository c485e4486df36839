import { startStub, type StubBackend } from '@guardian/stub-backend';

import { tokenizeCount } from './tokenize';
import { UpstreamClient } from './upstream-client';

describe('tokenizeCount against a real stub', () => {
  const messages = [
    { role: 'system', content: 'You review code.' },
    { role: 'user', content: 'Please look at the retry queue handler.' },
    { role: 'assistant', content: 'It retries forever; add a limit.' },
  ];
  const flatText = messages.map((m) => m.content).join('\n');
  let stub: StubBackend;
  let client: UpstreamClient;
  afterEach(async () => {
    await client.close();
    await stub.close();
  });
  const start = async (flavor: 'vllm' | 'llamacpp', tokenizeDelayMs = 0) => {
    stub = await startStub({ flavor, tokenizeDelayMs });
    client = new UpstreamClient({ origin: stub.url, timeoutSeconds: 5, connectTimeoutSeconds: 1 });
  };

  it('vLLM: the chat-templated {count} of /tokenize with messages', async () => {
    await start('vllm');
    const n = await tokenizeCount(client, {
      model: 'stub-model',
      messages,
      flatText,
      headers: {},
      timeoutMs: 1000,
    });
    expect(n).toBe(stub.countPrompt({ messages }, 'chat'));
  });

  it('llama.cpp: the messages rendered by /apply-template, then tokenized (the flat text alone undercounts)', async () => {
    await start('llamacpp');
    const n = await tokenizeCount(client, {
      model: 'stub-model',
      messages,
      flatText,
      headers: {},
      timeoutMs: 1000,
    });
    const flat = stub.countTokens(flatText);
    expect(n).toBeGreaterThan(flat);
    expect(stub.requests.map((r) => r.path)).toEqual(['/tokenize', '/apply-template', '/tokenize']);
  });

  it('gives up after the timeout (the caller keeps its estimate)', async () => {
    await start('vllm', 500);
    const n = await tokenizeCount(client, {
      model: 'stub-model',
      messages,
      flatText,
      headers: {},
      timeoutMs: 100,
    });
    expect(n).toBeUndefined();
  });
});
