import { startStub, type StubBackend } from './index';

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The stub refuses what the compaction protocols add, as vLLM does (issue 27): guardian must never forward them. */
describe('stub refuses compaction fields and items', () => {
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
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
      /compaction|context_management/,
    );
  });

  it('on /v1/messages: a compaction block, a compaction or context_management field is a 400, a plain request is answered', async () => {
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
    const plain = { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
    expect((await post(`${stub.baseUrl}/messages`, plain)).status).toBe(200);
  });
});
