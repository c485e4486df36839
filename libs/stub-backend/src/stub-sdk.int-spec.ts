import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startStub, type StubBackend } from './index';

/** The official SDKs are the clients guardian must serve; they must accept every shape the stub sends. */
describe('stub through the official SDKs', () => {
  let stub: StubBackend;
  let openai: OpenAI;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stub = await startStub({
      reply: (req) =>
        JSON.stringify(req.json).includes('weather')
          ? {
              text: 'checking',
              toolCalls: [{ id: 'call_w', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
            }
          : undefined,
    });
    openai = new OpenAI({ baseURL: stub.baseUrl, apiKey: 'test-key', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: stub.url, apiKey: 'test-key', maxRetries: 0 });
  });
  afterAll(() => stub.close());

  it('openai chat: streamed deltas and usage', async () => {
    const stream = await openai.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let promptTokens = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      promptTokens = chunk.usage?.prompt_tokens ?? promptTokens;
    }
    expect(text).toBe('ok: 1 messages received');
    expect(promptTokens).toBe(stub.countPrompt({ messages: [{ role: 'user', content: 'hi' }] }, 'chat'));
  });

  it('openai chat: tool calls through the stream helper', async () => {
    const runner = openai.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'weather?' }],
    });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]!.message.tool_calls?.[0]).toMatchObject({
      id: 'call_w',
      function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
    });
  });

  it('openai responses: JSON and the stream helper', async () => {
    const json = await openai.responses.create({ model: 'm', input: 'hi' });
    expect(json.output_text).toBe('ok: 1 messages received');
    const stream = openai.responses.stream({ model: 'm', input: [{ role: 'user', content: 'weather?' }] });
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('checking');
    expect(final.output.find((o) => o.type === 'function_call')).toMatchObject({ name: 'get_weather' });
  });

  it('anthropic messages: JSON and the stream helper', async () => {
    const params = { model: 'claude', max_tokens: 50, messages: [{ role: 'user' as const, content: 'hi' }] };
    const json = await anthropic.messages.create(params);
    expect(json.content[0]).toEqual({ type: 'text', text: 'ok: 1 messages received' });
    const final = await anthropic.messages
      .stream({ ...params, messages: [{ role: 'user', content: 'weather?' }] })
      .finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      expect.objectContaining({ type: 'text', text: 'checking' }),
      expect.objectContaining({ type: 'tool_use', name: 'get_weather', input: { city: 'Oslo' } }),
    ]);
    expect(final.usage.input_tokens).toBe(stub.requests.at(-1)!.promptTokens);
  });

  it('anthropic count_tokens and the overflow error surface as the SDK expects', async () => {
    const counted = await anthropic.messages.countTokens({
      model: 'c',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(counted.input_tokens).toBe(
      stub.countPrompt({ messages: [{ role: 'user', content: 'hi' }] }, 'messages'),
    );
    stub.overflowNext('anthropic');
    await expect(
      anthropic.messages.create({ model: 'c', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toMatchObject({ status: 400, error: { error: { type: 'invalid_request_error' } } });
  });
});
