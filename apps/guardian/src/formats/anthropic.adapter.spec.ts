import { allowedCuts } from '@guardian/compaction';

import { anthropicAdapter } from './anthropic.adapter';
import { IMAGE_CHARS, type Json, type ParsedConversation } from './format-adapter';

const cached = { type: 'ephemeral' };
const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };

/** A Claude Code-shaped conversation: tool pairs, thinking, a mid-conversation system item, unknown blocks. */
function request(): Json {
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 32000,
    stream: true,
    system: [
      { type: 'text', text: 'You are a coding agent.', cache_control: cached },
      { type: 'text', text: 'Project rules: run the tests.' },
    ],
    thinking: { type: 'enabled', budget_tokens: 4000 },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    output_config: { effort: 'high' },
    metadata: { user_id: 'u-1' },
    tools: [{ name: 'Read', description: 'Reads a file', input_schema: { type: 'object' } }],
    messages: [
      { role: 'user', content: 'Remember this: the release tag is v9.4.1. Then fix the parser.' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Read the parser first.', signature: 'sig-1' },
          { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'src/parser.ts' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'export function parse() {}' },
          { type: 'text', text: '<system-reminder>todo list is empty</system-reminder>' },
        ],
      },
      { role: 'system', content: 'The user switched to plan mode.' },
      {
        role: 'assistant',
        content: [
          { type: 'redacted_thinking', data: 'EuYBCkQYAiJA' },
          { type: 'text', text: 'Found it.' },
          { type: 'tool_use', id: 'toolu_2', name: 'Bash', input: { command: 'npm test' } },
          { type: 'tool_use', id: 'toolu_3', name: 'Read', input: { path: 'README.md' } },
        ],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_3',
            content: [{ type: 'text', text: '# readme' }, image],
          },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: '1 failing', is_error: true },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Tests fail in parse().' }] },
      {
        role: 'user',
        content: [
          image,
          { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'spec text' } },
          { type: 'future_block', payload: { x: 1 } },
          { type: 'text', text: 'Fix it please.', cache_control: cached },
        ],
      },
    ],
  };
}

function parse(json: unknown = request(), countTools = true): ParsedConversation {
  const conv = anthropicAdapter.parse(json, { countTools });
  if (!conv) throw new Error('expected the request to parse');
  return conv;
}

describe('anthropicAdapter.parse', () => {
  it('reads every block kind into neutral messages, pairing tool_use and tool_result by id', () => {
    const conv = parse();
    expect(conv.route).toBe('messages');
    expect(conv.stream).toBe(true);
    expect(conv.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'system',
      'assistant',
      'user',
      'assistant',
      'user',
    ]);
    const [first, call, result, , calls, results, , last] = conv.messages;
    expect(first).toMatchObject({ userTyped: true, spillable: true, callIds: [], resultIds: [] });
    expect(call).toMatchObject({
      callIds: ['toolu_1'],
      toolCalls: [{ name: 'Read', args: '{"path":"src/parser.ts"}' }],
    });
    // A tool_result message is the user role on the wire but nobody typed it: never pinned, never spilled.
    expect(result).toMatchObject({ resultIds: ['toolu_1'], userTyped: false, spillable: false });
    expect(result?.text).toContain('[tool result] export function parse() {}');
    expect(calls).toMatchObject({ callIds: ['toolu_2', 'toolu_3'], text: 'Found it.' });
    expect(results?.resultIds).toEqual(['toolu_3', 'toolu_2']);
    expect(results?.text).toContain('[tool error] 1 failing');
    expect(last?.text).toBe('Fix it please.');
    expect(conv.items).toBe((conv.json as { messages: unknown[] }).messages);
  });

  it('counts thinking, images, text documents and unknown blocks toward the estimate', () => {
    const conv = parse();
    expect(conv.messages[1]!.chars).toBeGreaterThanOrEqual('Read the parser first.'.length);
    expect(conv.messages[4]!.chars).toBeGreaterThan(
      JSON.stringify({ type: 'redacted_thinking', data: 'EuYBCkQYAiJA' }).length,
    );
    const last = conv.messages[7]!;
    const unknown = JSON.stringify({ type: 'future_block', payload: { x: 1 } }).length;
    expect(last.chars).toBe(IMAGE_CHARS + 'spec text'.length + unknown + 'Fix it please.'.length);
    expect(last.spillable).toBe(false);
  });

  it('counts a top-level system given as a string or as blocks, and the tools only when asked', () => {
    const json = request();
    const withTools = parse(json, true).fixedChars;
    const withoutTools = parse(json, false).fixedChars;
    expect(withoutTools).toBe('You are a coding agent.'.length + 'Project rules: run the tests.'.length);
    expect(withTools - withoutTools).toBe(JSON.stringify(json.tools).length);
    expect(parse({ ...json, system: 'Be brief.' }, false).fixedChars).toBe('Be brief.'.length);
    expect(parse({ ...json, system: undefined }, false).fixedChars).toBe(0);
  });

  it('leaves requests it cannot read to pass through', () => {
    expect(anthropicAdapter.parse({ messages: [] }, { countTools: true })).toBeUndefined();
    expect(anthropicAdapter.parse({ model: 'm', messages: 'hi' }, { countTools: true })).toBeUndefined();
    expect(anthropicAdapter.parse({ model: 'm', messages: ['hi'] }, { countTools: true })).toBeUndefined();
    expect(
      anthropicAdapter.parse({ model: 'm', messages: [{ content: 'x' }] }, { countTools: true }),
    ).toBeUndefined();
  });
});

describe('anthropicAdapter.rebuild', () => {
  it('keeps system items in order, appends the summary as a text block to system, forwards the rest as it came', () => {
    const conv = parse();
    const original = JSON.parse(JSON.stringify(conv.json)) as Json;
    const out = anthropicAdapter.rebuild(conv, { keep: [3, 6, 7], summaryBlock: 'SUMMARY' });
    expect(conv.json).toEqual(original); // the parsed request is never mutated
    const messages = out.messages as Json[];
    // The system item eviction left at the front joins `system`: `messages` starts with a user turn.
    expect(messages.map((m) => m.role)).toEqual(['assistant', 'user']);
    // Kept items are the client's own objects: cache_control, unknown blocks and field order untouched.
    expect(messages[1]).toBe(conv.items[7]);
    expect(out.system).toEqual([
      ...(original.system as unknown[]),
      { type: 'text', text: 'The user switched to plan mode.' },
      { type: 'text', text: 'SUMMARY' },
    ]);
    for (const key of [
      'model',
      'max_tokens',
      'stream',
      'thinking',
      'context_management',
      'output_config',
      'metadata',
      'tools',
    ])
      expect(out[key]).toEqual(original[key]);
  });

  it('leaves a system item where it is when a user turn comes before it', () => {
    const conv = parse();
    const out = anthropicAdapter.rebuild(conv, { keep: [0, 1, 2, 3, 6, 7], summaryBlock: 'S' });
    expect((out.messages as Json[]).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'system',
      'assistant',
      'user',
    ]);
  });

  it('turns a string system into blocks before appending, and creates system when there is none', () => {
    const withString = parse({ ...request(), system: 'Be brief.' });
    expect(anthropicAdapter.rebuild(withString, { keep: [7], summaryBlock: 'S' }).system).toEqual([
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: 'S' },
    ]);
    const without = parse({ ...request(), system: undefined });
    expect(anthropicAdapter.rebuild(without, { keep: [7], summaryBlock: 'S' }).system).toEqual([
      { type: 'text', text: 'S' },
    ]);
    expect(anthropicAdapter.rebuild(without, { keep: [7] }).system).toBeUndefined();
  });

  it('replaces a spilled text and keeps that block cache_control', () => {
    const json = request();
    const messages = json.messages as Json[];
    messages.push({ role: 'user', content: [{ type: 'text', text: 'x'.repeat(50), cache_control: cached }] });
    messages.push({ role: 'user', content: 'y'.repeat(50) });
    const conv = parse(json);
    const out = anthropicAdapter.rebuild(conv, {
      keep: [8, 9],
      replaceText: new Map([
        [8, 'HEAD...TAIL'],
        [9, 'short'],
      ]),
    });
    expect(out.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'HEAD...TAIL', cache_control: cached }] },
      { role: 'user', content: 'short' },
    ]);
  });

  it('allows only cuts whose kept tail starts at a typed user turn with every tool pair whole', () => {
    const conv = parse();
    const cuts = allowedCuts(conv.messages).flatMap((ok, i) => (ok ? [i] : []));
    expect(cuts).toEqual([7]);
    for (const cut of cuts) {
      const keep = conv.messages.flatMap((m, i) => (m.role === 'system' || i >= cut ? [i] : []));
      const out = anthropicAdapter.rebuild(conv, { keep, summaryBlock: 'S' });
      const firstTurn = (out.messages as Json[]).find((m) => m.role !== 'system');
      expect(firstTurn?.role).toBe('user');
      expect(JSON.stringify(firstTurn)).not.toContain('tool_result');
    }
  });
});

describe('anthropicAdapter summariser call and answers', () => {
  it('shapes the summariser call as a non-streamed /messages request', () => {
    const call = anthropicAdapter.summariserCall(
      'claude-x',
      { system: 'SYS', user: 'TRANSCRIPT' },
      { maxTokens: 512, reasoningEffort: 'low' },
    );
    expect(call).toEqual({
      path: '/messages',
      body: {
        model: 'claude-x',
        system: 'SYS',
        messages: [{ role: 'user', content: 'TRANSCRIPT' }],
        max_tokens: 512,
        stream: false,
      },
    });
  });

  it('reads the summary from text blocks only, dropping thinking', () => {
    const answer = {
      type: 'message',
      content: [
        { type: 'thinking', thinking: 'private', signature: 's' },
        { type: 'text', text: '<think>plan</think>Part one.' },
        { type: 'text', text: 'Part two.' },
      ],
    };
    expect(anthropicAdapter.summaryText(answer)).toBe('Part one.\nPart two.');
    expect(anthropicAdapter.summaryText({ choices: [] })).toBeUndefined();
  });

  it('reads usage (cache included) and tool calls from a JSON answer and from stream events', () => {
    const json = { toolNames: [] as string[], promptTokens: undefined as number | undefined };
    anthropicAdapter.observe(
      {
        content: [{ type: 'tool_use', id: 't', name: 'search_spans', input: {} }],
        usage: {
          input_tokens: 100,
          cache_read_input_tokens: 900,
          cache_creation_input_tokens: 50,
          output_tokens: 5,
        },
      },
      json,
    );
    expect(json).toEqual({ toolNames: ['search_spans'], promptTokens: 1050, completionTokens: 5 });

    const streamed = { toolNames: [] as string[], promptTokens: undefined as number | undefined };
    const events = [
      { type: 'message_start', message: { content: [], usage: { input_tokens: 321, output_tokens: 1 } } },
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 't', name: 'read_span', input: {} },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{}' } },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 7 } },
      { type: 'message_stop' },
    ];
    for (const e of events) anthropicAdapter.observe(e, streamed);
    // The output count of message_delta wins over message_start's first one.
    expect(streamed).toEqual({ toolNames: ['read_span'], promptTokens: 321, completionTokens: 7 });
  });
});

describe('anthropicAdapter.exactCount', () => {
  it('asks /messages/count_tokens with the fields that endpoint accepts, and reads input_tokens', () => {
    const conv = parse();
    const { path, body } = anthropicAdapter.exactCount!.request(conv);
    expect(path).toBe('/messages/count_tokens');
    expect(Object.keys(body).sort()).toEqual(
      ['context_management', 'messages', 'model', 'output_config', 'system', 'thinking', 'tools'].sort(),
    );
    expect(body.messages).toBe(conv.json.messages);
    expect(anthropicAdapter.exactCount!.read({ input_tokens: 1234 })).toBe(1234);
    expect(anthropicAdapter.exactCount!.read({ error: { type: 'not_found_error' } })).toBeUndefined();
  });
});
