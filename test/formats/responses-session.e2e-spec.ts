import OpenAI from 'openai';

import type { RecordedRequest } from '@guardian/stub-backend';

import { startStack, type Stack } from '../support/stack';
import { checkResponses, type Json } from './support/checks';
import { prose, sourceFile } from './support/session-text';

const WINDOW = 6000;
const FACT = 'Remember this: the staging port is FACT-RESP-8443.';
const INSTRUCTIONS = 'You are a coding agent. Use the shell tool to inspect the repository.';
const TURNS = 10;

let calls = 0;

/** The stub's assistant: a shell call for a typed turn, a short answer after a function_call_output. */
function reply(req: RecordedRequest) {
  const input = (req.json as { input: Json[] }).input;
  if (input.at(-1)?.type === 'function_call_output')
    return { text: `Checked; ${input.length} items in view.` };
  calls += 1;
  return {
    toolCalls: [
      { id: `call_${calls}`, name: 'shell', arguments: JSON.stringify({ command: ['cat', `f${calls}.ts`] }) },
    ],
  };
}

/** A reasoning item as a stateless client replays it (store: false, include: reasoning.encrypted_content). */
function reasoning(n: number): Json {
  return {
    type: 'reasoning',
    id: `rs_${n}`,
    summary: [{ type: 'summary_text', text: `Planning step ${n}.` }],
    encrypted_content: `gAAAAB${'Q'.repeat(64)}${n}`,
  };
}

const generations = (stack: Stack, summary: boolean) =>
  stack.stub.requests.filter((r) => r.route === 'responses' && r.isSummary === summary);

describe('OpenAI /v1/responses: a long stateless session with function calls through the official SDK', () => {
  let stack: Stack;
  let sdk: OpenAI;
  const sent: Json[] = [];

  beforeAll(async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: WINDOW, reply },
      // The summary path is what this session checks; clearing old tool results first (issue 32 item 3) is
      // tested in test/compaction/tool-results-cleared.e2e-spec.ts.
      env: {
        GUARDIAN_NUM_CTX: String(WINDOW),
        GUARDIAN_RESERVE_OUTPUT: '1000',
        GUARDIAN_CLEAR_TOOL_RESULTS: '0',
      },
    });
    sdk = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-resp' });
    const input: Json[] = [
      {
        type: 'message',
        role: 'developer',
        content: [{ type: 'input_text', text: '<permissions>workspace-write</permissions>' }],
      },
    ];
    for (let turn = 1; turn <= TURNS; turn++) {
      const head = turn === 1 ? `${FACT}\nStart the audit.` : `Audit step ${turn}.`;
      input.push({
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: `${head}\n${prose(turn, 260)}` }],
      });
      for (;;) {
        const body: Json = {
          model: 'stub-model',
          instructions: INSTRUCTIONS,
          store: false,
          include: ['reasoning.encrypted_content'],
          tools: [
            {
              type: 'function',
              name: 'shell',
              parameters: { type: 'object', properties: {} },
              strict: false,
            },
          ],
          input: input.map((i) => ({ ...i })),
        };
        sent.push(body);
        const res = await sdk.responses.create(body as never);
        input.push(reasoning(sent.length));
        for (const item of res.output) input.push(item as unknown as Json);
        const call = res.output.find((o) => o.type === 'function_call');
        if (!call || call.type !== 'function_call') break;
        input.push({
          type: 'function_call_output',
          call_id: call.call_id,
          output: sourceFile(sent.length, 12),
        });
      }
    }
  });
  afterAll(async () => {
    await stack.close();
  });

  it('answers every turn, and the history outgrows the window, so compaction was needed', () => {
    const forwarded = generations(stack, false);
    expect(forwarded).toHaveLength(sent.length);
    expect(forwarded.every((r) => r.status === 200)).toBe(true);
    expect(stack.stub.countPrompt(sent.at(-1), 'responses')).toBeGreaterThan(WINDOW);
  });

  it('forwards valid requests: developer summary first, instructions untouched, calls and outputs paired', () => {
    let compactions = 0;
    generations(stack, false).forEach((rec, i) => {
      const verdict = checkResponses(sent[i]!, rec.json as Json);
      expect({ request: i, problems: verdict.problems }).toEqual({ request: i, problems: [] });
      if (!verdict.compacted) return;
      compactions += 1;
      expect((rec.json as Json).instructions).toBe(INSTRUCTIONS);
      expect(verdict.summary).toContain(FACT);
      expect(stack.stub.countPrompt(rec.json, 'responses')).toBeLessThanOrEqual(WINDOW);
    });
    expect(compactions).toBeGreaterThan(0);
    // The sticky cut: later turns reuse the memoized summary, so there are fewer stretches than compacted requests.
    expect(generations(stack, true).length).toBeLessThan(compactions);
  });

  it('sends the summariser call to /v1/responses with the client key', () => {
    const summaries = generations(stack, true);
    expect(summaries.length).toBeGreaterThan(0);
    for (const rec of summaries) {
      expect(rec.path).toBe('/v1/responses');
      expect(rec.headers.authorization).toBe('Bearer sk-resp');
      expect(rec.status).toBe(200);
    }
  });

  it('streams the same response.* event sequence as the upstream sends directly, for a compacted request', async () => {
    const body = { ...sent.at(-1)!, stream: true };
    const events = async (client: OpenAI, b: Json) => {
      const stream = await client.responses.create(b as never);
      const types: string[] = [];
      for await (const e of stream as unknown as AsyncIterable<{ type: string }>) types.push(e.type);
      return types;
    };
    const viaGuardian = await events(sdk, body);
    const forwarded = generations(stack, false).at(-1)!;
    expect(checkResponses(body, forwarded.json as Json)).toMatchObject({ compacted: true, problems: [] });
    const fromStub = await events(
      new OpenAI({ baseURL: stack.stub.baseUrl, apiKey: 'sk-resp' }),
      forwarded.json as Json,
    );
    expect(viaGuardian).toEqual(fromStub);
    expect(viaGuardian[0]).toBe('response.created');
    expect(viaGuardian.at(-1)).toBe('response.completed');
  });

  it('passes a stateful request (previous_response_id) through byte for byte, even over the budget', async () => {
    // Over the budget (min(0.85 x window, window - reserve)) yet inside the window: a stateless request this size
    // would be compacted.
    const big = prose(99, 2700);
    const raw = `{"model":"stub-model",  "previous_response_id":"resp_stub_1","input":[{"role":"user","content":${JSON.stringify(big)}}]}`;
    const tokens = stack.stub.countPrompt(JSON.parse(raw), 'responses');
    expect(tokens).toBeGreaterThan(Math.min(WINDOW * 0.85, WINDOW - 1000));
    expect(tokens).toBeLessThan(WINDOW);
    const res = await fetch(`${stack.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-resp' },
      body: raw,
    });
    expect(res.status).toBe(200);
    const rec = stack.stub.requests.at(-1)!;
    expect(rec.body.toString('utf8')).toBe(raw);

    // The control: the same request without previous_response_id is one guardian changes (the big paste is spilled).
    const stateless = raw.replace('"previous_response_id":"resp_stub_1",', '');
    await fetch(`${stack.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-resp' },
      body: stateless,
    });
    expect(stack.stub.requests.at(-1)!.body.toString('utf8')).not.toBe(stateless);
  });
});
