import { startStack, type Stack } from '../support/stack';

/**
 * Found by the works-with run (docs/WORKS_WITH.md): with Codex 0.171.0 and Qwen Code 0.15.10 the first turn's only
 * evictable message was a short one (Codex's 477-character environment note, Qwen's short first messages), so
 * guardian summarised it and forwarded a request LARGER than the client's (log: tokens_before 22384 ->
 * tokens_after 22522). A compaction that does not shrink the request costs a summariser call and a span and helps
 * nothing; the request must go upstream as the client sent it. Shapes replayed from
 * test/works-with/recordings/codex-0.171.0.json (text replaced by filler of the same lengths).
 */
describe('a compaction never forwards a request larger than the client sent', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ stub: { window: 262144 }, env: { GUARDIAN_NUM_CTX: '8192' } });
  });
  afterAll(async () => {
    await stack.close();
  });

  const text = (n: number, word: string): string =>
    `${word} `.repeat(Math.ceil(n / (word.length + 1))).slice(0, n);
  const item = (role: string, n: number, word: string) => ({
    type: 'message',
    role,
    content: [{ type: role === 'assistant' ? 'output_text' : 'input_text', text: text(n, word) }],
  });

  it('forwards a Codex-shaped first turn whose only evictable message is short unchanged in size', async () => {
    const body = {
      model: 'stub-model',
      stream: false,
      store: false,
      input: [
        item('developer', 16979, 'instructions'),
        item('developer', 2495, 'permissions'),
        item('user', 477, 'environment'),
        item('user', 40147, 'pasted'),
      ],
    };
    const res = await fetch(`${stack.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const forwarded = stack.stub.requests.filter((r) => r.route === 'responses' && !r.isSummary);
    expect(forwarded).toHaveLength(1);
    const sent = stack.stub.countPrompt(body, 'responses');
    expect(forwarded[0]!.promptTokens).toBeLessThanOrEqual(sent);
  });
});
