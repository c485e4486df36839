import { chatAdapter } from './chat.adapter';
import { IMAGE_CHARS, type Json, type ObservedAnswer, type ParsedConversation } from './format-adapter';

function request(messages: unknown[]): Json {
  return {
    model: 'qwen',
    stream: false,
    temperature: 0.1,
    tools: [{ type: 'function', function: { name: 'ls' } }],
    messages,
  };
}

const history = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Remember this: the port is 8443.' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{"dir":"."}' } }],
  },
  { role: 'tool', tool_call_id: 'call_1', content: 'README.md' },
  { role: 'developer', content: 'Mid-conversation note.' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'Look at this.' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
    ],
  },
];

function parse(messages: unknown[] = history): ParsedConversation {
  const conv = chatAdapter.parse(request(messages), { countTools: true });
  if (!conv) throw new Error('expected the request to parse');
  return conv;
}

describe('chatAdapter', () => {
  it('parses roles, tool calls and results, and image parts', () => {
    const conv = parse();
    expect(conv.messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'system',
      'user',
    ]);
    expect(conv.messages[2]).toMatchObject({
      callIds: ['call_1'],
      toolCalls: [{ name: 'ls', args: '{"dir":"."}' }],
      spillable: false,
    });
    expect(conv.messages[3]).toMatchObject({ resultIds: ['call_1'], userTyped: false });
    expect(conv.messages[5]).toMatchObject({
      text: 'Look at this.',
      chars: 'Look at this.'.length + IMAGE_CHARS,
      spillable: false,
    });
    expect(conv.fixedChars).toBe(JSON.stringify(request([]).tools).length);
    expect(
      chatAdapter.parse({ model: 'q', messages: [{ content: 'x' }] }, { countTools: true }),
    ).toBeUndefined();
  });

  it('appends the summary to the leading system message, as a string or as a part', () => {
    const conv = parse();
    const out = chatAdapter.rebuild(conv, { keep: [0, 4, 5], summaryBlock: 'SUMMARY' });
    expect(out.messages).toEqual([
      { role: 'system', content: 'Be brief.\n\nSUMMARY' },
      history[4],
      history[5],
    ]);
    expect({ ...out, messages: undefined }).toEqual({ ...request([]), messages: undefined });

    const parts = parse([
      { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
      ...history.slice(1),
    ]);
    expect((chatAdapter.rebuild(parts, { keep: [0, 5], summaryBlock: 'S' }).messages as Json[])[0]).toEqual({
      role: 'system',
      content: [
        { type: 'text', text: 'Be brief.' },
        { type: 'text', text: 'S' },
      ],
    });
  });

  it('creates a leading system message when the conversation has none at the start', () => {
    const conv = parse(history.slice(1));
    const out = chatAdapter.rebuild(conv, { keep: [3, 4], summaryBlock: 'S' });
    // The developer message further down keeps its place and its text: the summary goes before the kept tail.
    expect(out.messages).toEqual([{ role: 'system', content: 'S' }, history[4], history[5]]);
  });

  it('shapes the summariser call, reads its answer, and observes usage and streamed tool calls', () => {
    const call = chatAdapter.summariserCall(
      'qwen',
      { system: 'SYS', user: 'T' },
      { maxTokens: 99, reasoningEffort: 'low' },
    );
    expect(call.path).toBe('/chat/completions');
    expect(call.body).toMatchObject({
      model: 'qwen',
      max_tokens: 99,
      stream: false,
      reasoning_effort: 'low',
    });
    expect(call.body.messages).toEqual([
      { role: 'system', content: 'SYS' },
      { role: 'user', content: 'T' },
    ]);
    expect(
      chatAdapter.summaryText({ choices: [{ message: { content: '<think>hm</think>\nThe gist.' } }] }),
    ).toBe('The gist.');
    expect(chatAdapter.summaryText({ content: [] })).toBeUndefined();

    const seen: ObservedAnswer = { toolNames: [] };
    chatAdapter.observe(
      {
        choices: [{ delta: { tool_calls: [{ index: 0, function: { name: 'read_span', arguments: '' } }] } }],
      },
      seen,
    );
    chatAdapter.observe(
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '{}' } }] } }] },
      seen,
    );
    chatAdapter.observe({ choices: [], usage: { prompt_tokens: 42 } }, seen);
    expect(seen).toEqual({ toolNames: ['read_span'], promptTokens: 42 });
    expect(chatAdapter.exactCount).toBeUndefined();
  });
});
