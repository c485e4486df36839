import { startStack, type Stack } from '../support/stack';

type Json = Record<string, any>;
type Route = 'chat' | 'messages' | 'responses';

const FACT = 'Remember this: the release branch is FACT-CLEAR-4410.';
const ASK = 'Which release branch do we use?';
const output = (n: number) =>
  `file ${n}:\n${`line ${n} of the handler, it reads the column back.\n`.repeat(60)}`;
const args = (i: number) => ({ path: `src/f${i}.ts` });

/**
 * One route's shapes: a tool-heavy conversation (each turn reads a file; the newest user message asks about them),
 * the path it is posted to, and how to read the forwarded body's tool results and calls back.
 */
interface Shapes {
  path: string;
  headers: Record<string, string>;
  body(items: Json[]): Json;
  /** The conversation with `uses` reads, then `tail` (more items) and the question. */
  conversation(uses: number, tail?: Json[]): Json[];
  /** A typed user turn and the assistant's short answer. */
  turn(text: string, answer: string): Json[];
  /** Tool-use id -> the result text, in the forwarded body. */
  results(body: Json): Record<string, string>;
  calls(body: Json): number;
  /** The text guardian's summary block went into. */
  block(body: Json): string;
}

const SHAPES: Record<Route, Shapes> = {
  chat: {
    path: '/v1/chat/completions',
    headers: { authorization: 'Bearer sk-clear' },
    body: (messages) => ({ model: 'stub-model', max_tokens: 64, messages }),
    conversation(uses, tail = []) {
      const messages: Json[] = [{ role: 'user', content: `${FACT} Read the files one by one.` }];
      for (let i = 1; i <= uses; i++) {
        messages.push({
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `t${i}`,
              type: 'function',
              function: { name: 'read_file', arguments: JSON.stringify(args(i)) },
            },
          ],
        });
        messages.push({ role: 'tool', tool_call_id: `t${i}`, content: output(i) });
      }
      return [
        ...messages,
        { role: 'assistant', content: 'I have read them all.' },
        ...tail,
        { role: 'user', content: ASK },
      ];
    },
    turn: (text, answer) => [
      { role: 'user', content: text },
      { role: 'assistant', content: answer },
    ],
    results: (body) =>
      Object.fromEntries(
        (body.messages as Json[])
          .filter((m) => m.role === 'tool')
          .map((m) => [m.tool_call_id, String(m.content)]),
      ),
    calls: (body) => (body.messages as Json[]).flatMap((m) => m.tool_calls ?? []).length,
    block: (body) => JSON.stringify((body.messages as Json[]).filter((m) => m.role === 'system')),
  },
  responses: {
    path: '/v1/responses',
    headers: { authorization: 'Bearer sk-clear' },
    body: (input) => ({ model: 'stub-model', max_output_tokens: 64, input }),
    conversation(uses, tail = []) {
      const input: Json[] = [{ role: 'user', content: `${FACT} Read the files one by one.` }];
      for (let i = 1; i <= uses; i++) {
        input.push({
          type: 'function_call',
          call_id: `t${i}`,
          name: 'read_file',
          arguments: JSON.stringify(args(i)),
        });
        input.push({ type: 'function_call_output', call_id: `t${i}`, output: output(i) });
      }
      return [
        ...input,
        {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'I have read them all.' }],
        },
        ...tail,
        { role: 'user', content: ASK },
      ];
    },
    turn: (text, answer) => [
      { role: 'user', content: text },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: answer }] },
    ],
    results: (body) =>
      Object.fromEntries(
        (body.input as Json[])
          .filter((i) => i.type === 'function_call_output')
          .map((i) => [i.call_id, String(i.output)]),
      ),
    calls: (body) => (body.input as Json[]).filter((i) => i.type === 'function_call').length,
    block: (body) => JSON.stringify((body.input as Json[]).filter((i) => i.role === 'developer')),
  },
  messages: {
    path: '/v1/messages',
    headers: { 'x-api-key': 'sk-clear', 'anthropic-version': '2023-06-01' },
    body: (messages) => ({ model: 'stub-model', max_tokens: 64, messages }),
    conversation(uses, tail = []) {
      const messages: Json[] = [{ role: 'user', content: `${FACT} Read the files one by one.` }];
      for (let i = 1; i <= uses; i++) {
        messages.push({
          role: 'assistant',
          content: [{ type: 'tool_use', id: `t${i}`, name: 'read_file', input: args(i) }],
        });
        messages.push({
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: output(i) }],
        });
      }
      return [
        ...messages,
        { role: 'assistant', content: 'I have read them all.' },
        ...tail,
        { role: 'user', content: ASK },
      ];
    },
    turn: (text, answer) => [
      { role: 'user', content: text },
      { role: 'assistant', content: answer },
    ],
    results: (body) =>
      Object.fromEntries(
        (body.messages as Json[])
          .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
          .filter((b: Json) => b.type === 'tool_result')
          .map((b: Json) => [b.tool_use_id, String(b.content)]),
      ),
    calls: (body) =>
      (body.messages as Json[])
        .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
        .filter((b: Json) => b.type === 'tool_use').length,
    block: (body) => JSON.stringify(body.system ?? ''),
  },
};

describe.each(['chat', 'responses', 'messages'] as const)(
  'over budget on the %s route, old tool results are cleared before any summary (issue 32 item 3)',
  (route) => {
    const shapes = SHAPES[route];
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack({
        stub: { window: 8192 },
        env: {
          GUARDIAN_NUM_CTX: '8192',
          GUARDIAN_RESERVE_OUTPUT: '512',
          GUARDIAN_PRECOMPACT_THRESHOLD: '0',
        },
      });
    });
    afterAll(() => stack.close());

    const send = async (items: Json[]): Promise<Json> => {
      stack.stub.reset();
      const res = await fetch(`${stack.guardian.url}${shapes.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...shapes.headers },
        body: JSON.stringify(shapes.body(items)),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      const sent = stack.stub.requests.filter((r) => r.route === route && !r.isSummary);
      expect(sent).toHaveLength(1);
      return sent[0]!.json as Json;
    };

    it('replaces every result but the newest three by a pointer to its span, keeps the calls, asks no summary', async () => {
      const items = shapes.conversation(12);
      const forwarded = await send(items);
      expect(stack.stub.requests.filter((r) => r.isSummary)).toHaveLength(0);
      // Every item forwarded: a result is replaced in place, never dropped.
      expect(forwarded.messages ?? forwarded.input).toHaveLength(items.length);
      const results = shapes.results(forwarded);
      expect(Object.keys(results)).toHaveLength(12);
      const cleared = Object.entries(results).filter(([, text]) =>
        text.startsWith('[context-guardian: old result'),
      );
      expect(cleared.length).toBeGreaterThan(0);
      for (const [id, text] of cleared)
        expect(text).toMatch(
          new RegExp(
            `read_file .*archived as \\S+; .*it read: "(?:\\[tool result\\] )?file ${id.slice(1)}:"\\]$`,
          ),
        );
      // Every one but the newest three, as Anthropic's clear_tool_uses with its default keep.
      expect(cleared.map(([id]) => id)).toEqual(Array.from({ length: 9 }, (_, i) => `t${i + 1}`));
      for (const n of [10, 11, 12]) expect(results[`t${n}`]).toBe(output(n));
      expect(shapes.calls(forwarded)).toBe(12);
      expect(JSON.stringify(forwarded)).toContain('FACT-CLEAR-4410');
      expect(stack.stub.countPrompt(forwarded, route)).toBeLessThanOrEqual(8192 - 512);
    });

    it('summarises as before when clearing the old results is not enough', async () => {
      const typed = 'The user pasted a long note. '.repeat(400);
      const tail = Array.from({ length: 4 }, () => shapes.turn(typed, 'noted')).flat();
      const forwarded = await send(shapes.conversation(4, tail));
      expect(stack.stub.requests.filter((r) => r.isSummary).length).toBeGreaterThan(0);
      expect(shapes.block(forwarded)).toContain('Context Guardian');
    });
  },
);
