import { countPrompt, countTokens, MESSAGE_OVERHEAD_TOKENS } from './token-count';

describe('countTokens', () => {
  it('charges ceil(length / 4) per whitespace-separated word', () => {
    expect(countTokens('')).toBe(0);
    expect(countTokens('a')).toBe(1);
    expect(countTokens('abcd')).toBe(1);
    expect(countTokens('abcde')).toBe(2);
    expect(countTokens('hello   world\n\tagain')).toBe(2 + 2 + 2);
  });

  it('charges 1 for a punctuation-only piece whatever its length', () => {
    expect(countTokens('-------- {} .')).toBe(3);
    expect(countTokens('x--------')).toBe(3);
  });

  it('treats non-ASCII characters as word characters', () => {
    expect(countTokens('日本語のテキスト')).toBe(2);
    expect(countTokens('«»')).toBe(1);
  });

  it('is not characters / 3.5', () => {
    const text = 'The quick brown fox jumps over the lazy dog';
    expect(countTokens(text)).toBe(12);
    expect(Math.ceil(text.length / 3.5)).toBe(13);
    expect(countTokens('a b c d e f g h')).toBe(8);
  });
});

describe('countPrompt', () => {
  const o = MESSAGE_OVERHEAD_TOKENS;

  it('counts chat messages, content parts, tool calls, tool results and the tools array', () => {
    const tools = [{ type: 'function', function: { name: 'read', parameters: { type: 'object' } } }];
    const body = {
      model: 'm',
      tools,
      messages: [
        { role: 'system', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'hello there' },
            { type: 'image_url', image_url: {} },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', function: { name: 'read', arguments: '{"p":1}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'file body' },
      ],
    };
    const expected =
      o +
      countTokens('be brief') +
      (o + countTokens('hello there') + 85) +
      (o + countTokens('read') + countTokens('{"p":1}')) +
      (o + countTokens('file body')) +
      countTokens(JSON.stringify(tools));
    expect(countPrompt(body, 'chat')).toBe(expected);
  });

  it('counts the Anthropic system prompt as a message, and tool_use / tool_result blocks', () => {
    const body = {
      system: [{ type: 'text', text: 'you are terse' }],
      messages: [
        { role: 'user', content: 'list files' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'ls', input: { dir: '.' } }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'a b' }] }],
        },
      ],
    };
    const expected =
      o +
      countTokens('you are terse') +
      (o + countTokens('list files')) +
      (o + countTokens('ls') + countTokens('{"dir":"."}')) +
      (o + countTokens('a b'));
    expect(countPrompt(body, 'messages')).toBe(expected);
  });

  it('counts Responses instructions, string input and item input', () => {
    expect(countPrompt({ instructions: 'be kind', input: 'hi you' }, 'responses')).toBe(
      o + countTokens('be kind') + o + countTokens('hi you'),
    );
    const items = {
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'run it' }] },
        { type: 'function_call', call_id: 'c', name: 'run', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c', output: 'done ok' },
      ],
    };
    expect(countPrompt(items, 'responses')).toBe(
      o + countTokens('run it') + (o + countTokens('run') + countTokens('{}')) + (o + countTokens('done ok')),
    );
  });

  it('counts a body that is not an object as empty', () => {
    expect(countPrompt('nonsense', 'chat')).toBe(0);
  });
});
