import { allowedCuts } from '@guardian/compaction';

import type { Json, ObservedAnswer, ParsedConversation } from './format-adapter';
import { responsesAdapter } from './responses.adapter';

const reasoning = (id: string): Json => ({
  type: 'reasoning',
  id,
  summary: [{ type: 'summary_text', text: 'Looking at the repo.' }],
  encrypted_content: 'gAAAAB' + 'x'.repeat(40),
});

/** A Codex-shaped stateless request: instructions, developer and user messages, reasoning, calls and outputs. */
function request(): Json {
  return {
    model: 'gpt-5-codex',
    instructions: 'You are Codex, a coding agent.',
    store: false,
    stream: true,
    include: ['reasoning.encrypted_content'],
    reasoning: { effort: 'medium', summary: 'auto' },
    tools: [{ type: 'function', name: 'shell', parameters: { type: 'object' } }],
    input: [
      {
        type: 'message',
        role: 'developer',
        content: [{ type: 'input_text', text: '<permissions>workspace-write</permissions>' }],
      },
      {
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: 'Remember this: the port is 8443. List files.' }],
      },
      reasoning('rs_1'),
      { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: '{"command":["ls"]}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'README.md\nsrc' },
      { type: 'custom_tool_call', call_id: 'call_2', name: 'apply_patch', input: '*** Begin Patch' },
      { type: 'local_shell_call', call_id: 'call_3', action: { type: 'exec', command: ['make'] } },
      { type: 'function_call_output', call_id: 'call_3', output: [{ type: 'input_text', text: 'built' }] },
      { type: 'custom_tool_call_output', call_id: 'call_2', output: 'applied' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Done.' }] },
      { role: 'system', content: 'Sandbox changed.' },
      { type: 'web_search_call', id: 'ws_1', status: 'completed' },
      { role: 'user', content: 'Now run the tests.' },
    ],
  };
}

function parse(json: unknown = request()): ParsedConversation {
  const conv = responsesAdapter.parse(json, { countTools: true });
  if (!conv) throw new Error('expected the request to parse');
  return conv;
}

describe('responsesAdapter.parse', () => {
  it('reads message, call, output and reasoning items, pairing calls with outputs by call_id', () => {
    const conv = parse();
    expect(conv.route).toBe('responses');
    expect(conv.messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'assistant',
      'tool',
      'assistant',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'system',
      'assistant',
      'user',
    ]);
    const m = conv.messages;
    expect(m[1]).toMatchObject({
      userTyped: true,
      spillable: true,
      text: 'Remember this: the port is 8443. List files.',
    });
    expect(m[3]).toMatchObject({
      callIds: ['call_1'],
      toolCalls: [{ name: 'shell', args: '{"command":["ls"]}' }],
    });
    expect(m[4]).toMatchObject({ resultIds: ['call_1'], text: 'README.md\nsrc', userTyped: false });
    expect(m[5]).toMatchObject({
      callIds: ['call_2'],
      toolCalls: [{ name: 'apply_patch', args: '*** Begin Patch' }],
    });
    expect(m[6]).toMatchObject({ callIds: ['call_3'], toolCalls: [{ name: 'local_shell' }] });
    expect(m[7]).toMatchObject({ resultIds: ['call_3'], text: 'built' });
    expect(m[8]).toMatchObject({ resultIds: ['call_2'] });
    expect(m[2]!.chars).toBeGreaterThan(40); // the encrypted reasoning is replayed to the model, so it counts
    expect(m[12]).toMatchObject({ role: 'user', text: 'Now run the tests.' });
    expect(conv.fixedChars).toBe(
      'You are Codex, a coding agent.'.length + JSON.stringify(request().tools).length,
    );
  });

  it('passes stateful and unreadable requests through', () => {
    const json = request();
    for (const stateful of [
      { ...json, previous_response_id: 'resp_123' },
      { ...json, conversation: 'conv_123' },
      { ...json, input: [...(json.input as unknown[]), { type: 'item_reference', id: 'msg_1' }] },
      { ...json, input: 'just a string' },
      { ...json, input: [{ type: 'message', role: 'tool', content: 'x' }] },
      { ...json, input: ['bare'] },
      { input: [] },
    ]) {
      expect(responsesAdapter.parse(stateful, { countTools: true })).toBeUndefined();
    }
    expect(parse({ ...json, previous_response_id: null }).messages).toHaveLength(13);
  });

  it('never lets a kept tail start inside a turn: reasoning, calls and outputs stay with the user turn before them', () => {
    const cuts = allowedCuts(parse().messages).flatMap((ok, i) => (ok ? [i] : []));
    expect(cuts).toEqual([12]);
  });
});

describe('responsesAdapter.rebuild', () => {
  it('puts the summary in a developer message after the leading instruction items and leaves instructions alone', () => {
    const conv = parse();
    const original = JSON.parse(JSON.stringify(conv.json)) as Json;
    const out = responsesAdapter.rebuild(conv, { keep: [0, 10, 12], summaryBlock: 'SUMMARY' });
    expect(conv.json).toEqual(original);
    const input = out.input as unknown[];
    // Item 0 is the client's leading developer item: the request starts with it, as the client sent it.
    expect(input[0]).toBe(conv.items[0]);
    expect(input[1]).toEqual({
      type: 'message',
      role: 'developer',
      content: [{ type: 'input_text', text: 'SUMMARY' }],
    });
    expect(input.slice(2)).toEqual([conv.items[10], conv.items[12]]);
    const { input: _in, ...rest } = out;
    const { input: _orig, ...originalRest } = original;
    expect(rest).toEqual(originalRest);
  });

  it('puts the summary first when the client sent no leading instruction items', () => {
    const json = request();
    const conv = parse({ ...json, input: (json.input as Json[]).slice(1) });
    const out = responsesAdapter.rebuild(conv, { keep: [9, 11], summaryBlock: 'SUMMARY' });
    const input = out.input as Json[];
    expect(input[0]).toMatchObject({ role: 'developer', content: [{ text: 'SUMMARY' }] });
    expect(input.slice(1)).toEqual([conv.items[9], conv.items[11]]);
  });

  it('replaces spilled text with the part type of the role', () => {
    const json = request();
    (json.input as Json[]).push(
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'long' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'long' }] },
    );
    const conv = parse(json);
    const out = responsesAdapter.rebuild(conv, {
      keep: [12, 13, 14],
      replaceText: new Map([
        [12, 'a'],
        [13, 'b'],
        [14, 'c'],
      ]),
    });
    expect(out.input).toEqual([
      { role: 'user', content: 'a' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'b' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'c' }] },
    ]);
  });
});

describe('responsesAdapter summariser call and answers', () => {
  it('shapes a stateless, non-streamed /responses call', () => {
    expect(
      responsesAdapter.summariserCall('gpt-5', { system: 'SYS', user: 'T' }, { maxTokens: 300 }),
    ).toEqual({
      path: '/responses',
      body: {
        model: 'gpt-5',
        instructions: 'SYS',
        input: 'T',
        max_output_tokens: 300,
        store: false,
        stream: false,
      },
    });
    const withEffort = responsesAdapter.summariserCall(
      'gpt-5',
      { system: 'S', user: 'T' },
      { maxTokens: 1, reasoningEffort: 'low' },
    );
    expect(withEffort.body.reasoning).toEqual({ effort: 'low' });
  });

  it('reads the summary from output_text or from message items, skipping reasoning', () => {
    expect(responsesAdapter.summaryText({ output_text: '<think>x</think> Sum.' })).toBe('Sum.');
    const answer = {
      output: [
        reasoning('rs_9'),
        {
          type: 'message',
          role: 'assistant',
          content: [
            { type: 'output_text', text: 'One.' },
            { type: 'refusal', refusal: 'no' },
          ],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Two.' }] },
      ],
    };
    expect(responsesAdapter.summaryText(answer)).toBe('One.\nTwo.');
    expect(responsesAdapter.summaryText('text')).toBeUndefined();
  });

  it('reads usage and counts each tool call once, from a JSON answer and from a stream', () => {
    const call = { type: 'function_call', call_id: 'c', name: 'search_spans', arguments: '{}' };
    const json: ObservedAnswer = { toolNames: [] };
    responsesAdapter.observe({ object: 'response', output: [call], usage: { input_tokens: 77 } }, json);
    expect(json).toEqual({ toolNames: ['search_spans'], promptTokens: 77 });

    const streamed: ObservedAnswer = { toolNames: [] };
    const events = [
      { type: 'response.created', response: { output: [], usage: null } },
      { type: 'response.output_item.added', item: { ...call, arguments: '' } },
      { type: 'response.function_call_arguments.delta', delta: '{}' },
      { type: 'response.output_item.done', item: call },
      { type: 'response.completed', response: { output: [call], usage: { input_tokens: 88 } } },
    ];
    for (const e of events) responsesAdapter.observe(e, streamed);
    expect(streamed).toEqual({ toolNames: ['search_spans'], promptTokens: 88 });
  });

  it('has no exact-count endpoint (the stub and vLLM serve none for Responses)', () => {
    expect(responsesAdapter.exactCount).toBeUndefined();
  });
});
