import OpenAI from 'openai';

import { startStack, type Stack } from '../support/stack';

type Json = Record<string, any>;

const FACT = 'Remember this: the release branch is FACT-NATIVE-7319.';
const filler = (n: number) =>
  `Step ${n}: ${'the parser reads the schema, the handler retries the queue, the cache keeps the cursor. '.repeat(6)}`;

/** A conversation long enough to summarise, the fact pinned in its first user message. */
function conversation(turns: number): Json[] {
  const items: Json[] = [{ type: 'message', role: 'user', content: `${FACT} ${filler(0)}` }];
  for (let i = 1; i <= turns; i++) {
    items.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: filler(i) }] });
    items.push({ type: 'message', role: 'user', content: `Continue with part ${i}. ${filler(i)}` });
  }
  return items;
}

const itemsOf = (stack: Stack) =>
  stack.stub.requests
    .filter((r) => r.route === 'responses')
    .flatMap((r) => {
      const input = (r.json as Json)?.input;
      return Array.isArray(input) ? input.map((i: Json) => i.type) : [];
    });

const forwarded = (stack: Stack): Json[] =>
  stack.stub.requests.filter((r) => r.route === 'responses' && !r.isSummary).map((r) => r.json as Json);

describe('OpenAI Responses compaction served for a backend that has none (issue 27)', () => {
  let stack: Stack;
  let sdk: OpenAI;

  beforeAll(async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: 16384 } });
    sdk = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-native' });
  });
  afterAll(() => stack.close());

  it('responses.compact returns the user messages and one compaction item; sent back, the pinned fact reaches the backend', async () => {
    const input = conversation(6);
    const compacted = await sdk.responses.compact({ model: 'stub-model', input: input as any });
    expect(compacted.object).toBe('response.compaction');
    const kinds = compacted.output.map((o: Json) => o.type ?? 'message');
    expect(kinds.filter((k) => k === 'compaction')).toHaveLength(1);
    expect(kinds.at(-1)).toBe('compaction');
    expect(compacted.output.slice(0, -1).every((o: Json) => o.role === 'user')).toBe(true);
    const item = compacted.output.at(-1) as Json;
    expect(item.encrypted_content).toMatch(/^cg2\.[\w-]+\.[\w-]+$/);
    // Guardian's own summariser wrote the summary, with the same upstream and model.
    expect(stack.stub.requests.filter((r) => r.isSummary)).toHaveLength(1);

    stack.stub.reset();
    const next = await sdk.responses.create({
      model: 'stub-model',
      input: [...(compacted.output as any[]), { role: 'user', content: 'Which branch do we release from?' }],
    });
    expect(next.status).toBe('completed');
    const forwarded = stack.stub.requests.filter((r) => r.route === 'responses' && !r.isSummary);
    expect(forwarded).toHaveLength(1);
    // The compaction item became guardian's summary block, which carries the pinned fact itself (the retained user
    // messages hold it too, so the block is checked on its own).
    const blocks = ((forwarded[0]!.json as Json).input as Json[]).filter(
      (i) => i.role === 'developer' && JSON.stringify(i).includes('CONTEXT-GUARDIAN-ARCHIVE'),
    );
    expect(blocks).toHaveLength(1);
    expect(JSON.stringify(blocks[0])).toContain('FACT-NATIVE-7319');
    expect(itemsOf(stack)).not.toContain('compaction');
  });

  it('a streamed compaction_trigger yields exactly one compaction item, then response.completed', async () => {
    stack.stub.reset();
    const stream = await sdk.responses.create({
      model: 'stub-model',
      stream: true,
      input: [...conversation(5), { type: 'compaction_trigger' }] as any,
    });
    const events: Json[] = [];
    for await (const e of stream) events.push(e);
    const done = events.filter((e) => e.type === 'response.output_item.done');
    expect(done.map((e) => e.item.type)).toEqual(['compaction']);
    const last = events.at(-1)!;
    expect(last.type).toBe('response.completed');
    expect(last.response.output.map((o: Json) => o.type)).toEqual(['compaction']);
    // The backend was asked for a summary only; it never saw the trigger.
    expect(itemsOf(stack)).not.toContain('compaction_trigger');
    expect(stack.stub.requests.filter((r) => r.route === 'responses' && !r.isSummary)).toHaveLength(0);
  });

  it('chained triggers, as Codex sends them, carry the first pins on whole through every compaction', async () => {
    let history: Json[] = conversation(4);
    for (let round = 0; round < 3; round++) {
      const res = await sdk.responses.create({
        model: 'stub-model',
        input: [...history, { type: 'compaction_trigger' }] as any,
      });
      expect(res.output.map((o) => o.type)).toEqual(['compaction']);
      history = [res.output[0] as Json, ...conversation(3).slice(1)];
    }
    stack.stub.reset();
    await sdk.responses.create({
      model: 'stub-model',
      input: [history[0] as any, { role: 'user', content: 'go on' }],
    });
    const block = (((forwarded(stack)[0]!.input as Json[])[0]!.content as Json[])[0] as Json).text as string;
    expect(block).toContain(`\n- ${FACT}`);
    expect(block).not.toContain('- - ');
  });

  it('a plain compaction_trigger answers one compaction item', async () => {
    const res = await sdk.responses.create({
      model: 'stub-model',
      input: [...conversation(4), { type: 'compaction_trigger' }] as any,
    });
    expect(res.output.map((o) => o.type)).toEqual(['compaction']);
  });

  it('an edited handle is refused with a 400 of its own code, and nothing is forwarded', async () => {
    const compacted = await sdk.responses.compact({ model: 'stub-model', input: conversation(4) as any });
    const item = compacted.output.at(-1) as Json;
    const handle: string = item.encrypted_content;
    const edited = `${handle.slice(0, 10)}${handle[10] === 'A' ? 'B' : 'A'}${handle.slice(11)}`;
    stack.stub.reset();
    const err = await sdk.responses
      .create({
        model: 'stub-model',
        input: [
          { ...item, encrypted_content: edited },
          { role: 'user', content: 'go on' },
        ] as any,
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect(JSON.stringify((err as InstanceType<typeof OpenAI.APIError>).error)).toContain(
      'GUARDIAN_COMPACTION_HANDLE_INVALID',
    );
    expect(stack.stub.requests).toHaveLength(0);
  });

  it('a body that only mentions compaction is forwarded byte for byte', async () => {
    stack.stub.reset();
    // Spacing, an escaped character and a key order JSON.stringify would not keep: only untouched bytes keep them.
    const body = Buffer.from(
      '{ "input" : [ {"role":"user", "content":"explain log compaction in Kafka \\u00e9, and context_management too"} ],\n  "model":"stub-model" }',
    );
    const res = await fetch(`${stack.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(200);
    const sent = stack.stub.requests.filter((r) => r.route === 'responses');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.body.equals(body)).toBe(true);
  });

  it('context_management is not forwarded to a backend that does not know it', async () => {
    stack.stub.reset();
    const res = await sdk.responses.create({
      model: 'stub-model',
      input: [{ role: 'user', content: 'hello' }],
      context_management: [{ type: 'compaction', compact_threshold: 100000 }],
    } as any);
    expect(res.status).toBe('completed');
    expect(JSON.stringify(stack.stub.requests[0]!.json)).not.toContain('context_management');
  });
});

describe('GUARDIAN_NATIVE_COMPACTION=passthrough', () => {
  it('forwards the protocol unchanged: this backend refuses the trigger as vLLM does', async () => {
    const stack = await startStack({ env: { GUARDIAN_NATIVE_COMPACTION: 'passthrough' } });
    try {
      const sdk = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-native' });
      const err = await sdk.responses
        .create({ model: 'stub-model', input: [...conversation(2), { type: 'compaction_trigger' }] as any })
        .catch((e: unknown) => e);
      expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
      expect(itemsOf(stack)).toContain('compaction_trigger');
    } finally {
      await stack.close();
    }
  });
});
