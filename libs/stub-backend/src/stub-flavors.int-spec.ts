import { countPrompt, countTokens, startStub, type StubBackend, type StubFlavor } from './index';

/** Response bodies are read loosely: the assertions are the type check. */
const readJson = (res: Response): Promise<any> => res.json();

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

const WINDOW = 64;
/** `n` one-token words in one user message: n + 4 tokens. */
const chatOf = (n: number) => ({ model: 'm', messages: [{ role: 'user', content: 'w '.repeat(n).trim() }] });

type Read = (json: any) => unknown;
interface Endpoint {
  method: 'GET' | 'POST';
  path: string;
  reads: Read[];
}

/** Where each backend really reports its window. */
const WINDOW_ENDPOINTS: Record<StubFlavor, Endpoint[]> = {
  vllm: [{ method: 'GET', path: '/v1/models', reads: [(j) => j.data[0].max_model_len] }],
  llamacpp: [
    { method: 'GET', path: '/props', reads: [(j) => j.default_generation_settings.n_ctx] },
    { method: 'GET', path: '/v1/models', reads: [(j) => j.data[0].meta.n_ctx_train] },
  ],
  ollama: [
    {
      method: 'POST',
      path: '/api/show',
      reads: [
        (j) => j.model_info['llama.context_length'],
        (j) => Number(/num_ctx\s+(\d+)/.exec(j.parameters)?.[1]),
      ],
    },
    { method: 'GET', path: '/api/ps', reads: [(j) => j.models[0].context_length] },
  ],
  lmstudio: [
    {
      method: 'GET',
      path: '/api/v0/models',
      reads: [(j) => j.data[0].max_context_length, (j) => j.data[0].loaded_context_length],
    },
  ],
  litellm: [
    { method: 'GET', path: '/model/info', reads: [(j) => j.data[0].model_info.max_input_tokens] },
    { method: 'GET', path: '/v1/model/info', reads: [(j) => j.data[0].model_info.max_input_tokens] },
  ],
  anthropic: [],
  none: [],
};

const FLAVORS = Object.keys(WINDOW_ENDPOINTS) as StubFlavor[];

describe.each(FLAVORS)('flavor %s window', (flavor) => {
  let stub: StubBackend;
  beforeAll(async () => {
    stub = await startStub({ flavor, window: WINDOW, model: 'org/model-7b' });
  });
  afterAll(() => stub.close());
  beforeEach(() => stub.reset());

  const call = (e: { method: string; path: string }) =>
    fetch(`${stub.url}${e.path}`, {
      method: e.method,
      headers: { 'content-type': 'application/json' },
      body: e.method === 'POST' ? JSON.stringify({ model: 'org/model-7b' }) : undefined,
    });

  it("answers 404 on the other backends' discovery endpoints", async () => {
    const mine = new Set(WINDOW_ENDPOINTS[flavor].map((e) => e.path));
    const others = FLAVORS.flatMap((f) => WINDOW_ENDPOINTS[f]).filter((e) => !mine.has(e.path));
    for (const endpoint of others.filter((e) => e.path !== '/v1/models')) {
      expect({ path: endpoint.path, status: (await call(endpoint)).status }).toEqual({
        path: endpoint.path,
        status: 404,
      });
    }
    const models = await call({ method: 'GET', path: '/v1/models' });
    if (flavor === 'none') expect(models.status).toBe(404);
    if (flavor !== 'vllm' && models.status === 200) {
      expect((await readJson(models)).data[0].max_model_len).toBeUndefined();
    }
  });

  it('accepts a prompt exactly at the window and rejects one token more with the real body', async () => {
    expect((await post(`${stub.baseUrl}/chat/completions`, chatOf(WINDOW - 4))).status).toBe(200);
    const res = await post(`${stub.baseUrl}/chat/completions`, { ...chatOf(WINDOW - 3), max_tokens: 10 });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await readJson(res)).toEqual(EXPECTED_OVERFLOW[flavor](WINDOW + 1, 10));
    expect(stub.requests.map((r) => [r.promptTokens, r.status])).toEqual([
      [WINDOW, 200],
      [WINDOW + 1, 400],
    ]);
  });

  it('rejects an overlong streamed request with the same JSON before any SSE byte', async () => {
    const res = await post(`${stub.baseUrl}/chat/completions`, { ...chatOf(WINDOW), stream: true });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await readJson(res)).toEqual(EXPECTED_OVERFLOW[flavor](WINDOW + 4, 0));
  });
});

describe.each(FLAVORS.filter((f) => WINDOW_ENDPOINTS[f].length > 0))('flavor %s discovery', (flavor) => {
  let stub: StubBackend;
  beforeAll(async () => {
    stub = await startStub({ flavor, window: WINDOW, model: 'org/model-7b' });
  });
  afterAll(() => stub.close());

  it("reports the window on this backend's discovery endpoints", async () => {
    for (const endpoint of WINDOW_ENDPOINTS[flavor]) {
      const res = await fetch(`${stub.url}${endpoint.path}`, {
        method: endpoint.method,
        headers: { 'content-type': 'application/json' },
        body: endpoint.method === 'POST' ? JSON.stringify({ model: 'org/model-7b' }) : undefined,
      });
      expect(res.status).toBe(200);
      const json = await readJson(res);
      expect(json._source).toBeUndefined();
      expect(JSON.stringify(json)).toContain('org/model-7b');
      for (const read of endpoint.reads) expect(read(json)).toBe(WINDOW);
    }
    expect(stub.requests.map((r) => r.route)).toEqual(WINDOW_ENDPOINTS[flavor].map(() => 'window'));
  });
});

/** The exact bodies, written out independently of the implementation. */
const EXPECTED_OVERFLOW: Record<StubFlavor, (p: number, c: number) => unknown> = {
  vllm: (p, c) => ({
    error: {
      message: `This model's maximum context length is ${WINDOW} tokens. However, you requested ${p + c} tokens (${p} in the messages, ${c} in the completion). Please reduce the length of the messages or completion.`,
      type: 'BadRequestError',
      param: 'input_tokens',
      code: 400,
    },
  }),
  llamacpp: (p) => ({
    error: {
      code: 400,
      message: `request (${p} tokens) exceeds the available context size (${WINDOW} tokens), try increasing it`,
      type: 'exceed_context_size_error',
      n_prompt_tokens: p,
      n_ctx: WINDOW,
    },
  }),
  ollama: () => ({
    error: {
      message: 'the input length exceeds the context length',
      type: 'invalid_request_error',
      param: null,
      code: null,
    },
  }),
  lmstudio: (p) => ({
    error: `Trying to keep the first ${p} tokens when context the overflows. However, the model is loaded with context length of only ${WINDOW} tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input`,
  }),
  litellm: (p, c) => ({
    error: {
      message: expect.stringMatching(
        new RegExp(
          `^litellm\\.ContextWindowExceededError: .*maximum context length is ${WINDOW} tokens.*\\(${p} in the messages, ${c} in the completion\\)`,
          's',
        ),
      ),
      type: null,
      param: null,
      code: '400',
    },
  }),
  anthropic: (p) => ({
    type: 'error',
    error: { type: 'invalid_request_error', message: `prompt is too long: ${p} tokens > ${WINDOW} maximum` },
  }),
  none: (p) => ({
    error: {
      message: `This model's maximum context length is ${WINDOW} tokens. However, your messages resulted in ${p} tokens. Please reduce the length of the messages.`,
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  }),
};

describe('overflow on the other APIs', () => {
  it('llama.cpp rejects /v1/messages with its own body; anthropic rejects /v1/responses with its own', async () => {
    const llama = await startStub({ flavor: 'llamacpp', window: WINDOW });
    const anthropic = await startStub({ flavor: 'anthropic', window: WINDOW });
    try {
      const res = await post(`${llama.url}/v1/messages`, {
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x '.repeat(80) }],
      });
      expect(res.status).toBe(400);
      expect((await readJson(res)).error.type).toBe('exceed_context_size_error');
      const res2 = await post(`${anthropic.url}/v1/responses`, { input: 'x '.repeat(80) });
      expect((await readJson(res2)).error.message).toBe(`prompt is too long: 84 tokens > ${WINDOW} maximum`);
    } finally {
      await llama.close();
      await anthropic.close();
    }
  });
});

describe('/tokenize', () => {
  const body = { model: 'm', messages: [{ role: 'user', content: 'count these five words please' }] };

  it('vLLM: {count, max_model_len, tokens} for messages and for a prompt, equal to the window count', async () => {
    const stub = await startStub({ flavor: 'vllm', window: 4096 });
    try {
      const json = await readJson(await post(`${stub.url}/tokenize`, body));
      expect(json.count).toBe(countPrompt(body, 'chat'));
      expect(json.max_model_len).toBe(4096);
      expect(json.tokens).toHaveLength(json.count);
      const prompt = await readJson(
        await post(`${stub.url}/tokenize`, { model: 'm', prompt: 'alpha beta gamma' }),
      );
      expect(prompt.count).toBe(countTokens('alpha beta gamma'));
      expect(stub.requests.map((r) => [r.route, r.promptTokens])).toEqual([
        ['tokenize', json.count],
        ['tokenize', prompt.count],
      ]);
      expect((await post(`${stub.url}/tokenize`, { model: 'm' })).status).toBe(400);
    } finally {
      await stub.close();
    }
  });

  it('llama.cpp: {tokens: [...]} for {content}', async () => {
    const stub = await startStub({ flavor: 'llamacpp' });
    try {
      const json = await readJson(await post(`${stub.url}/tokenize`, { content: 'alpha beta gamma delta' }));
      expect(Object.keys(json)).toEqual(['tokens']);
      expect(json.tokens).toHaveLength(countTokens('alpha beta gamma delta'));
      expect(json.tokens.every((t: unknown) => Number.isInteger(t))).toBe(true);
    } finally {
      await stub.close();
    }
  });

  it('is absent on other flavors and when switched off, and can be switched on', async () => {
    const ollama = await startStub({ flavor: 'ollama' });
    const off = await startStub({ flavor: 'vllm', tokenize: false });
    const on = await startStub({ flavor: 'lmstudio', tokenize: true });
    try {
      expect((await post(`${ollama.url}/tokenize`, body)).status).toBe(404);
      expect((await post(`${off.url}/tokenize`, body)).status).toBe(404);
      expect((await readJson(await post(`${on.url}/tokenize`, body))).count).toBe(countPrompt(body, 'chat'));
    } finally {
      await Promise.all([ollama.close(), off.close(), on.close()]);
    }
  });

  it('delays its answer by tokenizeDelayMs, so a client timeout gives up and the record says aborted', async () => {
    const stub = await startStub({ tokenizeDelayMs: 400 });
    try {
      await expect(
        fetch(`${stub.url}/tokenize`, {
          method: 'POST',
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(50),
        }),
      ).rejects.toThrow();
      await waitFor(() => stub.requests[0]?.aborted === true);
      expect(stub.requests[0]!.status).toBe(0);
    } finally {
      await stub.close();
    }
  });
});

async function waitFor(cond: () => boolean): Promise<void> {
  // Waits for a state that must come; the 5-minute bound only ends a hang (the verdict must not depend on speed).
  for (const giveUp = Date.now() + 300_000; !cond() && Date.now() < giveUp;)
    await new Promise((r) => setTimeout(r, 10));
  expect(cond()).toBe(true);
}
