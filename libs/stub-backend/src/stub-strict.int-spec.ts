import { startStub, type StubBackend } from './index';

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

const errorOf = async (res: Response): Promise<{ message: string; type: string; code?: unknown }> =>
  ((await res.json()) as { error: { message: string; type: string; code?: unknown } }).error;

/**
 * The stub refuses what a self-hosted backend refuses (issue 27, docs/native-compaction.md#the-strict-stub): the
 * compaction protocols' fields and items, a top-level field the route's API does not define, an input item or
 * content type it does not define. Guardian must never forward any of them.
 */
describe('stub refuses what the APIs do not define, and the compaction vocabulary', () => {
  let stub: StubBackend;
  beforeAll(async () => {
    stub = await startStub({});
  });
  afterAll(() => stub.close());

  const user = { type: 'message', role: 'user', content: 'hello' };
  it.each([
    ['a trailing compaction_trigger', { model: 'm', input: [user, { type: 'compaction_trigger' }] }],
    ['a compaction item', { model: 'm', input: [{ type: 'compaction', encrypted_content: 'x' }, user] }],
    ['context_management', { model: 'm', input: [user], context_management: [{ type: 'compaction' }] }],
  ])('on /v1/responses: %s is a 400', async (_name, body) => {
    const res = await post(`${stub.baseUrl}/responses`, body);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toMatch(/compaction|context_management/);
  });

  it.each([
    ['/responses', { model: 'm', input: 'hi', frobnicate: 1 }],
    ['/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }], frobnicate: 1 }],
  ])('an unknown top-level field on %s is a 400 in vLLM shape', async (path, body) => {
    const res = await post(`${stub.baseUrl}${path}`, body);
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toEqual({
      message: 'Unrecognized request argument supplied: frobnicate',
      type: 'Bad Request',
      param: null,
      code: 400,
    });
  });

  it('an unknown input item type or content type on /v1/responses is a 400', async () => {
    const item = await post(`${stub.baseUrl}/responses`, {
      model: 'm',
      input: [user, { type: 'bogus_item' }],
    });
    expect(item.status).toBe(400);
    expect((await errorOf(item)).message).toBe("input[1]: unknown input item type 'bogus_item'");
    const part = { type: 'message', role: 'user', content: [{ type: 'input_hologram', text: 'x' }] };
    const res = await post(`${stub.baseUrl}/responses`, { model: 'm', input: [part] });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toBe("input[0].content[0]: unknown content type 'input_hologram'");
  });

  it('an unknown content part on /v1/chat/completions is a 400', async () => {
    const messages = [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'hologram' }] }];
    const res = await post(`${stub.baseUrl}/chat/completions`, { model: 'm', messages });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toBe("messages[0].content[1]: unknown content type 'hologram'");
  });

  it('what the APIs define and vLLM adds is answered: tools, reasoning, function calls, sampling extras', async () => {
    const responses = {
      model: 'm',
      instructions: 'be brief',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'run it' }] },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thinking' }] },
        { type: 'function_call', call_id: 'c1', name: 'ls', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'a.txt' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'done' }] },
      ],
      tools: [{ type: 'function', name: 'ls', parameters: {} }],
      client_metadata: { session: 'x' },
      prompt_cache_key: 'k',
      top_k: 20,
    };
    expect((await post(`${stub.baseUrl}/responses`, responses)).status).toBe(200);
    const chat = {
      model: 'm',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      ],
      stream_options: { include_usage: true },
      chat_template_kwargs: { enable_thinking: false },
      repetition_penalty: 1.05,
    };
    expect((await post(`${stub.baseUrl}/chat/completions`, chat)).status).toBe(200);
  });

  it('on /v1/messages: a compaction block, a compaction or context_management field, an unknown block or field is a 400; a plain request is answered', async () => {
    const block = { type: 'compaction', content: 'summary', signature: 's' };
    const messages = [
      { role: 'assistant', content: [block] },
      { role: 'user', content: 'go on' },
    ];
    expect((await post(`${stub.baseUrl}/messages`, { model: 'm', max_tokens: 8, messages })).status).toBe(
      400,
    );
    const field = {
      model: 'm',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hi' }],
      compaction: { type: 'summarize' },
    };
    expect((await post(`${stub.baseUrl}/messages`, field)).status).toBe(400);
    // Anthropic's context editing and threshold compaction: guardian applies them, so the field must never arrive.
    const managed = {
      model: 'm',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hi' }],
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    };
    const refusal = await post(`${stub.baseUrl}/messages`, managed);
    expect(refusal.status).toBe(400);
    expect(await refusal.text()).toContain('context_management');
    const nested = [
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'ls', input: {} }] },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'hologram' }] }],
      },
    ];
    const inner = await post(`${stub.baseUrl}/messages`, { model: 'm', max_tokens: 8, messages: nested });
    expect(inner.status).toBe(400);
    expect(await inner.json()).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: "messages[1].content[0].content[0]: unknown content type 'hologram'",
      },
    });
    const unknown = { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }], frobnicate: 1 };
    expect((await post(`${stub.baseUrl}/messages`, unknown)).status).toBe(400);
    const plain = {
      model: 'm',
      max_tokens: 8,
      system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'hi' }],
      thinking: { type: 'enabled', budget_tokens: 1024 },
      metadata: { user_id: 'u' },
    };
    expect((await post(`${stub.baseUrl}/messages`, plain)).status).toBe(200);
  });
});
