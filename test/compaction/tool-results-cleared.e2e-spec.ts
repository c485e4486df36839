import { startStack, type Stack } from '../support/stack';

type Json = Record<string, any>;

const FACT = 'Remember this: the release branch is FACT-CLEAR-4410.';
const output = (n: number) =>
  `file ${n}:\n${`line ${n} of the handler, it reads the column back.\n`.repeat(60)}`;

/** A tool-heavy Anthropic conversation: each turn reads a file; the newest user message asks about them. */
function conversation(uses: number, ask = 'Which release branch do we use?'): Json[] {
  const messages: Json[] = [{ role: 'user', content: `${FACT} Read the files one by one.` }];
  for (let i = 1; i <= uses; i++) {
    messages.push({
      role: 'assistant',
      content: [{ type: 'tool_use', id: `t${i}`, name: 'read_file', input: { path: `src/f${i}.ts` } }],
    });
    messages.push({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: output(i) }],
    });
  }
  messages.push({ role: 'assistant', content: 'I have read them all.' });
  messages.push({ role: 'user', content: ask });
  return messages;
}

const resultsOf = (body: Json): Record<string, string> =>
  Object.fromEntries(
    (body.messages as Json[])
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((b: Json) => b.type === 'tool_result')
      .map((b: Json) => [b.tool_use_id, String(b.content)]),
  );

describe('over budget, old tool results are cleared before any summary (issue 32 item 3)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      stub: { window: 8192 },
      env: { GUARDIAN_NUM_CTX: '8192', GUARDIAN_RESERVE_OUTPUT: '512', GUARDIAN_PRECOMPACT_THRESHOLD: '0' },
    });
  });
  afterAll(() => stack.close());

  const send = async (messages: Json[]): Promise<Json> => {
    stack.stub.reset();
    const res = await fetch(`${stack.guardian.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'sk-clear',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify({ model: 'stub-model', max_tokens: 64, messages }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const sent = stack.stub.requests.filter((r) => r.route === 'messages' && !r.isSummary);
    expect(sent).toHaveLength(1);
    return sent[0]!.json as Json;
  };

  it('replaces the oldest results by pointers to their spans, keeps the calls and the newest three, asks no summary', async () => {
    const sentMessages = conversation(12);
    const forwarded = await send(sentMessages);
    expect(stack.stub.requests.filter((r) => r.isSummary)).toHaveLength(0);
    expect(forwarded.messages).toHaveLength(sentMessages.length);
    const results = resultsOf(forwarded);
    const cleared = Object.entries(results).filter(([, text]) =>
      text.startsWith('[context-guardian: old result'),
    );
    expect(cleared.length).toBeGreaterThan(0);
    for (const [, text] of cleared) expect(text).toMatch(/read_file .*archived as \S+/);
    // Oldest first, and the newest three whole.
    const ids = cleared.map(([id]) => Number(id.slice(1)));
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    for (const n of [10, 11, 12]) expect(results[`t${n}`]).toBe(output(n));
    const calls = (forwarded.messages as Json[])
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((b: Json) => b.type === 'tool_use');
    expect(calls).toHaveLength(12);
    expect(JSON.stringify(forwarded)).toContain('FACT-CLEAR-4410');
    expect(stack.stub.countPrompt(forwarded, 'messages')).toBeLessThanOrEqual(8192 - 512);
  });

  it('summarises as before when clearing the old results is not enough', async () => {
    const typed = 'The user pasted a long note. '.repeat(400);
    const messages = conversation(4);
    const many = [
      ...messages.slice(0, -1),
      { role: 'user', content: typed },
      { role: 'assistant', content: 'ok' },
    ];
    const forwarded = await send([
      ...many,
      ...Array.from({ length: 3 }, () => [
        { role: 'user', content: typed },
        { role: 'assistant', content: 'noted' },
      ]).flat(),
      messages.at(-1)!,
    ]);
    expect(stack.stub.requests.filter((r) => r.isSummary).length).toBeGreaterThan(0);
    expect(JSON.stringify(forwarded.system ?? '')).toContain('Context Guardian');
  });
});
