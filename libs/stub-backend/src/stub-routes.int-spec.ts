import { createParser } from 'eventsource-parser';
import { countPrompt, startStub, type StubBackend } from './index';

/** Response bodies are read loosely: the assertions are the type check. */
const readJson = (res: Response): Promise<any> => res.json();

interface SseEvent {
  event?: string;
  data: string;
}

function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = createParser({ onEvent: (e) => events.push({ event: e.event, data: e.data }) });
  parser.feed(text);
  return events;
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('stub routes', () => {
  let stub: StubBackend;
  beforeAll(async () => {
    stub = await startStub({
      reply: (req) => {
        const text = JSON.stringify(req.json);
        return text.includes('use the tool')
          ? { text: '', toolCalls: [{ id: 'call_1', name: 'read_file', arguments: '{"path":"a.txt"}' }] }
          : undefined;
      },
    });
  });
  afterAll(() => stub.close());
  beforeEach(() => stub.reset());

  const messages = [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'hello there' },
  ];

  it('listens on loopback and exposes the /v1 base URL', () => {
    expect(stub.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(stub.baseUrl).toBe(`${stub.url}/v1`);
    expect(stub.window).toBe(8192);
  });

  it('answers chat completions as JSON with the stub count as prompt_tokens', async () => {
    const body = { model: 'm1', messages };
    const res = await post(`${stub.baseUrl}/chat/completions`, body, { authorization: 'Bearer k' });
    expect(res.status).toBe(200);
    const json = await readJson(res);
    expect(json.object).toBe('chat.completion');
    expect(json.model).toBe('m1');
    expect(json.choices[0].message).toEqual({ role: 'assistant', content: 'ok: 2 messages received' });
    expect(json.choices[0].finish_reason).toBe('stop');
    const prompt = countPrompt(body, 'chat');
    expect(json.usage.prompt_tokens).toBe(prompt);
    expect(json.usage.total_tokens).toBe(prompt + json.usage.completion_tokens);
    const [rec] = stub.requests;
    expect(rec).toMatchObject({ method: 'POST', path: '/v1/chat/completions', route: 'chat', status: 200 });
    expect(rec!.promptTokens).toBe(prompt);
    expect(rec!.headers.authorization).toBe('Bearer k');
    expect(rec!.body.toString()).toBe(JSON.stringify(body));
    expect(rec!.json).toEqual(body);
    expect(rec!.aborted).toBe(false);
  });

  it('streams chat completions: role chunk, 2+ content deltas, finish, usage, [DONE]', async () => {
    const res = await post(`${stub.baseUrl}/chat/completions`, {
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseSse(await res.text());
    expect(events.at(-1)!.data).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    const deltas = chunks.filter((c) => c.choices[0]?.delta.content).map((c) => c.choices[0].delta.content);
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    expect(deltas.join('')).toBe('ok: 2 messages received');
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
    expect(chunks.at(-1).choices).toEqual([]);
    expect(chunks.at(-1).usage.prompt_tokens).toBe(stub.requests[0]!.promptTokens);
  });

  it('omits the usage chunk unless include_usage is set', async () => {
    const events = parseSse(
      await (await post(`${stub.baseUrl}/chat/completions`, { messages, stream: true })).text(),
    );
    const last = JSON.parse(events.at(-2)!.data);
    expect(last.choices[0].finish_reason).toBe('stop');
    expect(last.usage).toBeUndefined();
  });

  it('returns scripted tool calls on chat, JSON and streamed', async () => {
    const body = { messages: [{ role: 'user', content: 'please use the tool' }] };
    const json = await readJson(await post(`${stub.baseUrl}/chat/completions`, body));
    expect(json.choices[0].finish_reason).toBe('tool_calls');
    expect(json.choices[0].message.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
    ]);
    const events = parseSse(
      await (await post(`${stub.baseUrl}/chat/completions`, { ...body, stream: true })).text(),
    );
    const calls = events.slice(0, -1).flatMap((e) => JSON.parse(e.data).choices[0]?.delta.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ index: 0, id: 'call_1', function: { name: 'read_file' } });
    expect(calls.map((c: { function: { arguments: string } }) => c.function.arguments).join('')).toBe(
      '{"path":"a.txt"}',
    );
  });

  it('answers Anthropic messages as JSON, with a query string on the path', async () => {
    const body = {
      model: 'claude-x',
      max_tokens: 100,
      system: 'terse',
      messages: [{ role: 'user', content: 'hi' }],
    };
    const res = await post(`${stub.url}/v1/messages?beta=true`, body);
    const json = await readJson(res);
    expect(json).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-x',
      content: [{ type: 'text', text: 'ok: 1 messages received' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: countPrompt(body, 'messages') },
    });
    expect(json.id).toMatch(/^msg_/);
    expect(stub.requests[0]).toMatchObject({ path: '/v1/messages?beta=true', route: 'messages' });
  });

  it('streams Anthropic messages in the real event order', async () => {
    const body = { max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] };
    const events = parseSse(await (await post(`${stub.url}/v1/messages`, body)).text());
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('message_start');
    expect(names[1]).toBe('content_block_start');
    expect(names.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    const data = events.map((e) => JSON.parse(e.data));
    expect(data[0].message.usage.input_tokens).toBe(countPrompt(body, 'messages'));
    const text = data.filter((d) => d.type === 'content_block_delta').map((d) => d.delta.text);
    expect(text.length).toBeGreaterThanOrEqual(2);
    expect(text.join('')).toBe('ok: 1 messages received');
    expect(data.at(-2).usage.output_tokens).toBeGreaterThan(0);
    for (const e of events) expect(JSON.parse(e.data).type).toBe(e.event);
  });

  it('returns tool_use blocks on messages when the reply has tool calls', async () => {
    const body = { max_tokens: 10, messages: [{ role: 'user', content: 'use the tool' }] };
    const json = await readJson(await post(`${stub.url}/v1/messages`, body));
    expect(json.stop_reason).toBe('tool_use');
    expect(json.content).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'read_file', input: { path: 'a.txt' } },
    ]);
    const events = parseSse(await (await post(`${stub.url}/v1/messages`, { ...body, stream: true })).text());
    const data = events.map((e) => JSON.parse(e.data));
    expect(data.find((d) => d.type === 'content_block_start').content_block).toMatchObject({
      type: 'tool_use',
    });
    const partial = data.filter((d) => d.delta?.type === 'input_json_delta').map((d) => d.delta.partial_json);
    expect(JSON.parse(partial.join(''))).toEqual({ path: 'a.txt' });
  });

  it('counts tokens for Anthropic count_tokens', async () => {
    const body = { model: 'c', messages: [{ role: 'user', content: 'count me please' }] };
    const json = await readJson(await post(`${stub.url}/v1/messages/count_tokens`, body));
    expect(json).toEqual({ input_tokens: countPrompt(body, 'messages') });
    expect(stub.requests[0]!.route).toBe('count_tokens');
  });

  it('answers Responses as JSON for string and item input', async () => {
    const body = { model: 'r', instructions: 'be kind', input: 'hello' };
    const json = await readJson(await post(`${stub.url}/v1/responses`, body));
    expect(json).toMatchObject({
      object: 'response',
      status: 'completed',
      output: [
        {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'ok: 1 messages received' }],
        },
      ],
      usage: { input_tokens: countPrompt(body, 'responses') },
    });
    expect(json.usage.total_tokens).toBe(json.usage.input_tokens + json.usage.output_tokens);
    const items = {
      input: [
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
      ],
    };
    const second = await readJson(await post(`${stub.url}/v1/responses`, items));
    expect(second.output[0].content[0].text).toBe('ok: 2 messages received');
  });

  it('streams Responses: created first, 2+ text deltas, completed last with usage', async () => {
    const events = parseSse(
      await (await post(`${stub.url}/v1/responses`, { input: 'hi', stream: true })).text(),
    );
    expect(events[0]!.event).toBe('response.created');
    expect(events.at(-1)!.event).toBe('response.completed');
    const deltas = events
      .filter((e) => e.event === 'response.output_text.delta')
      .map((e) => JSON.parse(e.data).delta);
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    expect(deltas.join('')).toBe('ok: 1 messages received');
    const done = JSON.parse(events.at(-1)!.data);
    expect(done.response.usage.input_tokens).toBe(stub.requests[0]!.promptTokens);
    expect(events.map((e) => JSON.parse(e.data).sequence_number)).toEqual(events.map((_, i) => i));
  });

  it('serves health, HEAD / and a JSON 404 for unknown paths', async () => {
    expect((await fetch(`${stub.url}/health`)).status).toBe(200);
    expect((await fetch(`${stub.url}/`, { method: 'HEAD' })).status).toBe(200);
    const res = await fetch(`${stub.url}/nope`);
    expect(res.status).toBe(404);
    expect((await readJson(res)).error.message).toContain('/nope');
    expect(stub.requests.map((r) => r.route)).toEqual(['other', 'other', 'other']);
  });

  it('rejects a generation body that is not JSON with a 400', async () => {
    const res = await fetch(`${stub.baseUrl}/chat/completions`, { method: 'POST', body: 'not json' });
    expect(res.status).toBe(400);
    expect(stub.requests[0]).toMatchObject({ json: undefined, status: 400 });
    expect(stub.requests[0]!.body.toString()).toBe('not json');
  });
});
