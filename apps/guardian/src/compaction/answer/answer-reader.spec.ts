import { AnswerReader, usageMember } from './answer-reader';
import { anthropicAdapter } from '../../formats/anthropic.adapter';
import { chatAdapter } from '../../formats/chat.adapter';
import type { FormatAdapter, ObservedAnswer } from '../../formats/format-adapter';
import { responsesAdapter } from '../../formats/responses.adapter';

function read(adapter: FormatAdapter, contentType: string, chunks: string[]): ObservedAnswer {
  const into: ObservedAnswer = { toolNames: [] };
  const reader = AnswerReader.for(adapter, into, contentType)!;
  for (const c of chunks) reader.push(Buffer.from(c));
  reader.end();
  return into;
}

/** Splits a text into pieces of `n` bytes, as a socket may deliver it. */
const pieces = (text: string, n: number) => text.match(new RegExp(`[\\s\\S]{1,${n}}`, 'g')) ?? [];

describe('usageMember', () => {
  it('finds the last "usage" object, past strings that hold braces, quotes and the word usage', () => {
    const body = Buffer.from(
      JSON.stringify({
        choices: [{ message: { content: 'a "usage": {"prompt_tokens": 1} } in text' } }],
        usage: { prompt_tokens: 42, detail: { nested: '}' } },
      }),
    );
    expect(JSON.parse(usageMember(body)!)).toEqual({ prompt_tokens: 42, detail: { nested: '}' } });
  });

  it('skips "usage": null and answers without usage', () => {
    expect(usageMember(Buffer.from('{"usage": null, "id": "x"}'))).toBeUndefined();
    expect(usageMember(Buffer.from('{"id": "x"}'))).toBeUndefined();
    expect(usageMember(Buffer.from('{"usage" :\n {"input_tokens": 3}}'))).toBe('{"input_tokens": 3}');
  });
});

describe('AnswerReader', () => {
  it('reads prompt tokens from JSON answers of the three routes, split anywhere', () => {
    const chat = JSON.stringify({ choices: [{ message: { content: 'ok' } }], usage: { prompt_tokens: 7 } });
    expect(read(chatAdapter, 'application/json', pieces(chat, 5)).promptTokens).toBe(7);
    const messages = JSON.stringify({
      content: [{ type: 'text', text: 'ok' }],
      usage: { input_tokens: 5, cache_read_input_tokens: 10, output_tokens: 1 },
    });
    expect(read(anthropicAdapter, 'application/json', [messages]).promptTokens).toBe(15);
    const responses = JSON.stringify({ output: [], usage: { input_tokens: 9, output_tokens: 1 } });
    expect(read(responsesAdapter, 'application/json; charset=utf-8', [responses]).promptTokens).toBe(9);
  });

  it('reads the tool calls of a JSON answer that makes them', () => {
    const chat = JSON.stringify({
      choices: [{ message: { tool_calls: [{ function: { name: 'search_spans', arguments: '{}' } }] } }],
      usage: { prompt_tokens: 3 },
    });
    expect(read(chatAdapter, 'application/json', pieces(chat, 7))).toEqual({
      promptTokens: 3,
      toolNames: ['search_spans'],
    });
  });

  it('reads usage and tool calls from an SSE stream whose other events say usage: null', () => {
    const events = [
      { choices: [{ delta: { content: 'he' } }], usage: null },
      {
        choices: [{ delta: { tool_calls: [{ function: { name: 'read_span', arguments: '' } }] } }],
        usage: null,
      },
      { choices: [{ delta: { content: 'llo' } }], usage: null },
      { choices: [], usage: { prompt_tokens: 11, completion_tokens: 2 } },
    ];
    const text = `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`;
    expect(read(chatAdapter, 'text/event-stream', pieces(text, 9))).toEqual({
      promptTokens: 11,
      completionTokens: 2,
      toolNames: ['read_span'],
    });
  });

  it("reads Anthropic's input tokens from message_start", () => {
    const text = [
      'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":21,"output_tokens":1}}}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"hi"}}\n\n',
      'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":4}}\n\n',
    ].join('');
    expect(read(anthropicAdapter, 'text/event-stream', pieces(text, 13)).promptTokens).toBe(21);
  });

  it('reads nothing from other content types', () => {
    expect(AnswerReader.for(chatAdapter, { toolNames: [] }, 'text/plain')).toBeUndefined();
  });
});
