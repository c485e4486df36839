import { SUMMARY_MARKER, startStub, type RecordedRequest, type StubBackend } from './index';

/** Response bodies are read loosely: the assertions are the type check. */
const readJson = (res: Response): Promise<any> => res.json();

const post = (url: string, body: unknown, signal?: AbortSignal) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });

const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'm',
  messages: [{ role: 'user', content }],
  ...extra,
});

async function waitFor(cond: () => boolean): Promise<void> {
  // Waits for a state that must come; the 5-minute bound only ends a hang (the verdict must not depend on speed).
  for (const giveUp = Date.now() + 300_000; !cond() && Date.now() < giveUp;)
    await new Promise((r) => setTimeout(r, 10));
  expect(cond()).toBe(true);
}

/** Reads from a stream until `text` holds one complete SSE event. */
async function readFirstEvent(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('\n\n')) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  return text;
}

describe('stub controls', () => {
  let stub: StubBackend;
  const seen: RecordedRequest[] = [];
  beforeAll(async () => {
    stub = await startStub({
      window: 200,
      reply: (req) => {
        seen.push(req);
        return JSON.stringify(req.json).includes('script me') ? { text: 'scripted answer here' } : undefined;
      },
    });
  });
  afterAll(() => stub.close());
  beforeEach(() => {
    stub.reset();
    seen.length = 0;
  });

  it('holds a stream after its first event until release()', async () => {
    const hold = stub.holdNextStream();
    const res = await post(`${stub.baseUrl}/chat/completions`, chat('hi', { stream: true }));
    const reader = res.body!.getReader();
    await hold.firstEventSent;
    const first = await readFirstEvent(reader);
    expect(first.trim().split('\n\n')).toHaveLength(1);
    expect(JSON.parse(first.trim().slice('data: '.length)).choices[0].delta.role).toBe('assistant');
    expect(stub.requests[0]).toMatchObject({ status: 200, aborted: false });
    hold.release();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read())
      rest += new TextDecoder().decode(r.value);
    expect(rest.trim().endsWith('data: [DONE]')).toBe(true);
    expect(stub.requests[0]!.aborted).toBe(false);
  });

  it('holds only the next stream: the one after flows freely', async () => {
    const hold = stub.holdNextStream();
    const held = post(`${stub.baseUrl}/chat/completions`, chat('one', { stream: true })).then((r) =>
      r.text(),
    );
    await hold.firstEventSent;
    const free = await (await post(`${stub.baseUrl}/chat/completions`, chat('two', { stream: true }))).text();
    expect(free).toContain('[DONE]');
    hold.release();
    expect(await held).toContain('[DONE]');
  });

  it('marks a request aborted when the client goes away mid-stream', async () => {
    const hold = stub.holdNextStream();
    const controller = new AbortController();
    const res = await post(
      `${stub.baseUrl}/chat/completions`,
      chat('hi', { stream: true }),
      controller.signal,
    );
    const reader = res.body!.getReader();
    await hold.firstEventSent;
    await readFirstEvent(reader);
    controller.abort();
    await waitFor(() => stub.requests[0]!.aborted);
    hold.release();
    expect((await post(`${stub.baseUrl}/chat/completions`, chat('next'))).status).toBe(200);
    expect(stub.requests[1]!.aborted).toBe(false);
  });

  it('failNext answers the next generation requests, not discovery, in order', async () => {
    stub.failNext(500, { error: { message: 'boom' } });
    stub.failNext(503, { error: { message: 'busy' } });
    expect((await fetch(`${stub.baseUrl}/models`)).status).toBe(200);
    const first = await post(`${stub.baseUrl}/chat/completions`, chat('hi', { stream: true }));
    expect([first.status, await readJson(first)]).toEqual([500, { error: { message: 'boom' } }]);
    const second = await post(`${stub.url}/v1/messages`, {
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(second.status).toBe(503);
    expect((await post(`${stub.baseUrl}/chat/completions`, chat('hi'))).status).toBe(200);
    expect(stub.requests.map((r) => [r.route, r.status])).toEqual([
      ['window', 200],
      ['chat', 500],
      ['messages', 503],
      ['chat', 200],
    ]);
  });

  it('overflowNext rejects a fitting request with the flavor body, or the shape asked for', async () => {
    stub.overflowNext();
    stub.overflowNext('anthropic');
    const vllm = await post(`${stub.baseUrl}/chat/completions`, chat('tiny'));
    expect(vllm.status).toBe(400);
    expect((await readJson(vllm)).error.message).toMatch(
      /^This model's maximum context length is 200 tokens\. However, you requested 5 tokens/,
    );
    const anthropic = await post(`${stub.baseUrl}/chat/completions`, chat('tiny'));
    expect(await readJson(anthropic)).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'prompt is too long: 5 tokens > 200 maximum' },
    });
    expect((await post(`${stub.baseUrl}/chat/completions`, chat('tiny'))).status).toBe(200);
  });

  it('reset clears records and pending one-shots', async () => {
    await post(`${stub.baseUrl}/chat/completions`, chat('hi'));
    stub.failNext(500, {});
    stub.overflowNext();
    stub.reset();
    expect(stub.requests).toHaveLength(0);
    const res = await post(`${stub.baseUrl}/chat/completions`, chat('hi', { stream: true }));
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('[DONE]');
  });

  it('answers summary requests with the stub summary and Must Keep bullets, bypassing reply()', async () => {
    const body = {
      model: 'm',
      messages: [
        { role: 'system', content: `${SUMMARY_MARKER}: condense the transcript. script me` },
        {
          role: 'user',
          content: 'we chose FACT-DB-postgres and FACT-PORT-5432, then FACT-DB-postgres again',
        },
      ],
    };
    const json = await readJson(await post(`${stub.baseUrl}/chat/completions`, body));
    const text: string = json.choices[0].message.content;
    expect(text).toMatch(/^Summary of the earlier conversation: /);
    expect(text.split('\n').slice(1)).toEqual(['## Must Keep', '- FACT-DB-postgres', '- FACT-PORT-5432']);
    expect(stub.requests[0]!.isSummary).toBe(true);
    expect(seen).toHaveLength(0);
    const anthropic = await readJson(
      await post(`${stub.url}/v1/messages`, {
        max_tokens: 9,
        system: SUMMARY_MARKER,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(anthropic.content[0].text).toMatch(
      /^Summary of the earlier conversation: [^]*\n## Must Keep\n- \(none\)$/,
    );
  });

  it('holdSummaries holds summary requests, not the client requests, until release()', async () => {
    const hold = stub.holdSummaries();
    const summary = {
      model: 'm',
      messages: [
        { role: 'system', content: `${SUMMARY_MARKER}: condense the transcript.` },
        { role: 'user', content: 'we chose FACT-DB-postgres' },
      ],
    };
    let answered = false;
    const held = post(`${stub.baseUrl}/chat/completions`, summary).then((res) => {
      answered = true;
      return res;
    });
    await hold.arrived;
    // A client request flows while the summary waits.
    expect((await post(`${stub.baseUrl}/chat/completions`, chat('hello'))).status).toBe(200);
    expect(answered).toBe(false);
    hold.release();
    expect((await held).status).toBe(200);
    // Released for good: the next summary is not held.
    expect((await post(`${stub.baseUrl}/chat/completions`, summary)).status).toBe(200);
  });

  it('still rejects a summary request over the window', async () => {
    const res = await post(`${stub.baseUrl}/chat/completions`, chat(`${SUMMARY_MARKER} ${'w '.repeat(300)}`));
    expect(res.status).toBe(400);
    expect(stub.requests[0]).toMatchObject({ isSummary: true, status: 400 });
  });

  it('passes the recorded request to reply() and serves its text', async () => {
    const json = await readJson(await post(`${stub.baseUrl}/chat/completions`, chat('please script me')));
    expect(json.choices[0].message.content).toBe('scripted answer here');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBe(stub.requests[0]);
    expect(seen[0]!.promptTokens).toBe(stub.countPrompt(chat('please script me'), 'chat'));
  });
});

describe('stub options', () => {
  it('marks a request aborted when the client gives up during latencyMs', async () => {
    const stub = await startStub({ latencyMs: 2000 });
    try {
      // Give up once the stub holds the request (a fixed 30 ms could pass before it arrived, on a busy machine).
      const giveUp = new AbortController();
      const sent = post(`${stub.baseUrl}/chat/completions`, chat('hi'), giveUp.signal);
      await waitFor(() => stub.requests.length === 1);
      giveUp.abort();
      await expect(sent).rejects.toThrow();
      await waitFor(() => stub.requests[0]?.aborted === true);
    } finally {
      await stub.close();
    }
  });

  it('keeps at most maxRecorded records, newest last', async () => {
    const stub = await startStub({ maxRecorded: 2 });
    try {
      for (const path of ['/a', '/b', '/c']) await fetch(`${stub.url}${path}`);
      expect(stub.requests.map((r) => r.path)).toEqual(['/b', '/c']);
    } finally {
      await stub.close();
    }
  });

  it('refuses invalid options with a stable code, and a taken port with another', async () => {
    await expect(startStub({ window: 0 })).rejects.toMatchObject({ code: 'STUB_INVALID_OPTIONS' });
    const first = await startStub();
    try {
      const port = Number(new URL(first.url).port);
      await expect(startStub({ port })).rejects.toMatchObject({ code: 'STUB_LISTEN_FAILED' });
    } finally {
      await first.close();
    }
  });

  it('close() ends a held stream and can be called twice', async () => {
    const stub = await startStub();
    stub.holdNextStream();
    const res = await post(`${stub.baseUrl}/chat/completions`, chat('hi', { stream: true }));
    const body = res.text().catch((err: unknown) => err);
    await stub.close();
    await stub.close();
    const result = await body;
    expect(String(result)).not.toContain('[DONE]');
    expect(typeof result).not.toBe('string');
    await expect(fetch(`${stub.url}/health`)).rejects.toThrow();
  });
});

describe('stub truncate mode', () => {
  it('answers a prompt over the window with 200, reporting the window, as Ollama past num_ctx does', async () => {
    const stub = await startStub({ window: 200, truncate: true });
    try {
      const long = 'word '.repeat(400);
      const over = await readJson(await post(`${stub.baseUrl}/chat/completions`, chat(long)));
      const sent = stub.requests[0]!;
      expect(sent.promptTokens).toBeGreaterThan(200);
      expect({ status: sent.status, truncated: sent.truncated, reported: over.usage.prompt_tokens }).toEqual({
        status: 200,
        truncated: true,
        reported: 200,
      });
      const fits = await readJson(await post(`${stub.baseUrl}/chat/completions`, chat('short')));
      expect(stub.requests[1]!.truncated).toBeUndefined();
      expect(fits.usage.prompt_tokens).toBe(stub.requests[1]!.promptTokens);
    } finally {
      await stub.close();
    }
  });
});
