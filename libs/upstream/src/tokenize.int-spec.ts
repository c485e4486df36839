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
  const tools = [
    {
      type: 'function',
      function: {
        name: 'run_shell',
        description: 'Run a shell command in the repository and return what it printed',
        parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
      },
    },
  ];
  // Where the count must come, the timeout is a hang guard far past any busy machine; the give-up case below sets its
  // own, shorter than the stub's delay (one process, so the timers fire in that order however slow the machine).
  const ANSWERS_MS = 60_000;
  const start = async (flavor: 'vllm' | 'llamacpp', tokenizeDelayMs = 0, tokenizeTools = true) => {
    stub = await startStub({ flavor, tokenizeDelayMs, tokenizeTools });
    client = new UpstreamClient({ origin: stub.url, timeoutSeconds: 120, connectTimeoutSeconds: 60 });
  };

  it('vLLM: the chat-templated {count} of /tokenize with messages', async () => {
    await start('vllm');
    const n = await tokenizeCount(client, {
      model: 'stub-model',
      messages,
      flatText,
      headers: {},
      timeoutMs: ANSWERS_MS,
    });
    expect(n).toEqual({ tokens: stub.countPrompt({ messages }, 'chat'), toolsEstimated: false });
  });

  // Issue 11 finding 4: Qwen Code's 11 tools were left out, 39,448 counted against a real 48,153.
  it('vLLM: sends the tools, which the chat template renders, so the count includes them', async () => {
    await start('vllm');
    const n = await tokenizeCount(client, {
      model: 'stub-model',
      messages,
      flatText,
      tools,
      toolTokens: 999,
      headers: {},
      timeoutMs: ANSWERS_MS,
    });
    expect(n).toEqual({ tokens: stub.countPrompt({ messages, tools }, 'chat'), toolsEstimated: false });
    expect(n!.tokens).toBeGreaterThan(stub.countPrompt({ messages }, 'chat'));
  });

  it('vLLM that refuses `tools`: counts the messages and adds the estimated tools, saying so', async () => {
    await start('vllm', 0, false);
    const n = await tokenizeCount(client, {
      model: 'stub-model',
      messages,
      flatText,
      tools,
      toolTokens: 57,
      headers: {},
      timeoutMs: ANSWERS_MS,
    });
    expect(n).toEqual({ tokens: stub.countPrompt({ messages }, 'chat') + 57, toolsEstimated: true });
    expect(stub.requests.map((r) => r.status)).toEqual([400, 200]);
  });

  it('llama.cpp: the messages rendered by /apply-template, then tokenized (the flat text alone undercounts)', async () => {
    await start('llamacpp');
    const n = await tokenizeCount(client, {
      model: 'stub-model',
      messages,
      flatText,
      headers: {},
      timeoutMs: ANSWERS_MS,
    });
    const flat = stub.countTokens(flatText);
    expect(n!.tokens).toBeGreaterThan(flat);
    expect(n!.toolsEstimated).toBe(false);
    expect(stub.requests.map((r) => r.path)).toEqual(['/tokenize', '/apply-template', '/tokenize']);
  });

  it('llama.cpp: the tools go into /apply-template and so into the count', async () => {
    await start('llamacpp');
    const opts = { model: 'stub-model', messages, flatText, headers: {}, timeoutMs: ANSWERS_MS };
    const without = await tokenizeCount(client, opts);
    const withTools = await tokenizeCount(client, { ...opts, tools, toolTokens: 1 });
    expect(withTools!.toolsEstimated).toBe(false);
    expect(withTools!.tokens - without!.tokens).toBeGreaterThanOrEqual(
      stub.countTokens(JSON.stringify(tools)),
    );
  });

  it('vLLM: once it answered {count}, later counts send only what it reads (no flat text), and count the same', async () => {
    await start('vllm');
    const opts = { model: 'stub-model', messages, headers: {}, timeoutMs: ANSWERS_MS };
    let built = 0;
    const lazyText = () => (built++, flatText);
    const first = await tokenizeCount(client, { ...opts, flatText: lazyText });
    const second = await tokenizeCount(client, { ...opts, flatText: lazyText });
    const third = await tokenizeCount(client, { ...opts, flatText: lazyText, tools, toolTokens: 5 });
    expect(second).toEqual(first);
    expect(third).toEqual({ tokens: stub.countPrompt({ messages, tools }, 'chat'), toolsEstimated: false });
    expect(built).toBe(1);
    const sent = stub.requests.map((r) =>
      Object.keys(r.json as object)
        .sort()
        .join(','),
    );
    expect(sent).toEqual(['content,messages,model', 'messages,model', 'messages,model,tools']);
  });

  it('vLLM that turns out to refuse `tools` after counts without them: counts the messages, estimates the tools', async () => {
    await start('vllm', 0, false);
    const opts = { model: 'stub-model', messages, flatText, headers: {}, timeoutMs: ANSWERS_MS };
    await tokenizeCount(client, opts);
    const withTools = { ...opts, tools, toolTokens: 57 };
    const expected = { tokens: stub.countPrompt({ messages }, 'chat') + 57, toolsEstimated: true };
    expect(await tokenizeCount(client, withTools)).toEqual(expected);
    expect(await tokenizeCount(client, withTools)).toEqual(expected);
    // The refusal is learned: the third count does not send the tools again.
    expect(stub.requests.map((r) => r.status)).toEqual([200, 400, 200, 200]);
  });

  it('llama.cpp: once the template route worked, later counts skip the flat /tokenize', async () => {
    await start('llamacpp');
    const opts = { model: 'stub-model', messages, flatText, headers: {}, timeoutMs: ANSWERS_MS };
    const first = await tokenizeCount(client, opts);
    const second = await tokenizeCount(client, opts);
    expect(second).toEqual(first);
    expect(stub.requests.map((r) => r.path)).toEqual([
      '/tokenize',
      '/apply-template',
      '/tokenize',
      '/apply-template',
      '/tokenize',
    ]);
  });

  it('keeps what it learned for a model still counted while 256 newer models are learned', async () => {
    await start('vllm');
    const count = (model: string) =>
      tokenizeCount(client, { model, messages, flatText, headers: {}, timeoutMs: ANSWERS_MS });
    const lastSent = () =>
      Object.keys(stub.requests.at(-1)!.json as object)
        .sort()
        .join(',');
    await count('busy');
    for (let i = 1; i <= 256; i++) {
      await count(`m-${i}`);
      if (i === 200) await count('busy');
    }
    await count('busy');
    expect(lastSent()).toBe('messages,model');
    await count('m-1');
    expect(lastSent()).toBe('content,messages,model');
  });

  it('asks with both shapes again after an answer of the other shape (the upstream was replaced)', async () => {
    await start('vllm');
    const opts = { model: 'stub-model', messages, flatText, headers: {}, timeoutMs: ANSWERS_MS };
    await tokenizeCount(client, opts);
    const vllmOrigin = stub.url;
    await stub.close();
    stub = await startStub({ flavor: 'llamacpp', port: Number(new URL(vllmOrigin).port) });
    // The learned vLLM shape gets no {count}: this count falls back to the estimate, and the next one probes again.
    expect(await tokenizeCount(client, opts)).toBeUndefined();
    const again = await tokenizeCount(client, opts);
    expect(again!.tokens).toBeGreaterThan(stub.countTokens(flatText));
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
