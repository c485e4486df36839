import Anthropic from '@anthropic-ai/sdk';

import { samples, sumOf } from '../support/prom-text';
import { startStack, type Stack } from '../support/stack';

type Json = Record<string, any>;

const FACT = 'Remember this: the staging host is FACT-ANTH-5521.';
const filler = (n: number) =>
  `Part ${n}: ${'the migration adds a column, the fixture seeds it, the handler reads it back. '.repeat(6)}`;

function conversation(turns: number): Json[] {
  const messages: Json[] = [{ role: 'user', content: `${FACT} ${filler(0)}` }];
  for (let i = 1; i <= turns; i++) {
    messages.push({ role: 'assistant', content: filler(i) });
    messages.push({ role: 'user', content: `Next, part ${i}. ${filler(i)}` });
  }
  return messages;
}

const BETA = { betas: ['compact-2026-09-04'] };

describe('Anthropic on-demand compaction served for a backend that has none (issue 27)', () => {
  let stack: Stack;
  let sdk: Anthropic;

  beforeAll(async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: 16384 } });
    sdk = new Anthropic({ baseURL: stack.baseURL.replace(/\/v1$/, ''), apiKey: 'sk-ant-native' });
  });
  afterAll(() => stack.close());

  const compact = () =>
    sdk.beta.messages.create({
      model: 'stub-model',
      max_tokens: 256,
      messages: conversation(6) as any,
      compaction: { type: 'summarize' },
      ...BETA,
    } as any);

  it('answers one readable signed compaction block; sent back first, its text is forwarded, not the block', async () => {
    const res = (await compact()) as Json;
    expect(res.stop_reason).toBe('compaction');
    expect(res.content).toHaveLength(1);
    const block = res.content[0];
    expect(block.type).toBe('compaction');
    expect(block.content).toContain('CONTEXT-GUARDIAN-ARCHIVE');
    expect(block.content).toContain('FACT-ANTH-5521');
    expect(block.signature).toMatch(/^cg2\./);
    expect(res.usage.iterations.map((i: Json) => i.type)).toEqual(['compaction']);

    stack.stub.reset();
    const next = await sdk.beta.messages.create({
      model: 'stub-model',
      max_tokens: 64,
      messages: [
        { role: 'assistant', content: [block] },
        { role: 'user', content: 'Which host do we stage on?' },
      ] as any,
      ...BETA,
    });
    expect(next.stop_reason).toBe('end_turn');
    const sent = stack.stub.requests.filter((r) => r.route === 'messages' && !r.isSummary);
    expect(sent).toHaveLength(1);
    const text = JSON.stringify(sent[0]!.json);
    expect(text).toContain('FACT-ANTH-5521');
    expect(text).not.toContain('"compaction"');
  });

  it('a streamed on-demand compaction carries the block and stop_reason compaction', async () => {
    const stream = sdk.beta.messages.stream({
      model: 'stub-model',
      max_tokens: 256,
      messages: conversation(5) as any,
      compaction: { type: 'summarize' },
      ...BETA,
    } as any);
    const final = (await stream.finalMessage()) as Json;
    expect(final.stop_reason).toBe('compaction');
    expect(final.content.map((b: Json) => b.type)).toEqual(['compaction']);
    expect(final.content[0].content).toContain('FACT-ANTH-5521');
  });

  it('an edited block is refused with a 400 of its own code, and nothing is forwarded', async () => {
    const block = ((await compact()) as Json).content[0];
    stack.stub.reset();
    const err = await sdk.beta.messages
      .create({
        model: 'stub-model',
        max_tokens: 64,
        messages: [
          {
            role: 'assistant',
            content: [{ ...block, content: block.content.replace('FACT-ANTH-5521', 'FACT-ANTH-0000') }],
          },
          { role: 'user', content: 'go on' },
        ] as any,
        ...BETA,
      } as any)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(400);
    expect(JSON.stringify((err as InstanceType<typeof Anthropic.APIError>).error)).toContain(
      'GUARDIAN_COMPACTION_HANDLE_INVALID',
    );
    expect(stack.stub.requests).toHaveLength(0);
  });

  it('a body that only mentions compaction is forwarded byte for byte', async () => {
    stack.stub.reset();
    const body = Buffer.from(
      '{ "model":"stub-model", "max_tokens" : 32,\n "messages":[{"role":"user","content":"how does compaction work in LSM trees \\u00e9? and context_management?"}] }',
    );
    const res = await fetch(`${stack.baseURL}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body,
    });
    expect(res.status).toBe(200);
    const sent = stack.stub.requests.filter((r) => r.route === 'messages');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.body.equals(body)).toBe(true);
  });

  it('refuses what Anthropic refuses: a trailing unanswered tool call, and context_management with it', async () => {
    const toolCall = {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 't1', name: 'read', input: {} }],
    };
    const refusedWith = (extra: Json) =>
      sdk.beta.messages
        .create({
          model: 'stub-model',
          max_tokens: 64,
          compaction: { type: 'summarize' },
          ...BETA,
          ...extra,
        } as any)
        .then(
          () => 0,
          (e: InstanceType<typeof Anthropic.APIError>) => e.status,
        );
    expect(await refusedWith({ messages: [...conversation(2), toolCall] })).toBe(400);
    expect(
      await refusedWith({
        messages: conversation(2),
        context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
      }),
    ).toBe(400);
  });

  it('counts on-demand compactions, refusals and handles, and tells the events feed', async () => {
    const all = samples(await (await fetch(`${stack.guardian.url}/metrics`)).text());
    expect(
      sumOf(all, 'guardian_native_requests_total', { entry: 'messages_on_demand', outcome: 'applied' }),
    ).toBe(3);
    expect(
      sumOf(all, 'guardian_native_requests_total', { entry: 'messages_on_demand', outcome: 'refused' }),
    ).toBe(2);
    expect(sumOf(all, 'guardian_native_handles_total', { route: 'messages', outcome: 'block' })).toBe(1);
    expect(sumOf(all, 'guardian_native_handles_total', { route: 'messages', outcome: 'invalid' })).toBe(1);
    expect(sumOf(all, 'guardian_requests_total', { route: 'messages', outcome: 'served' })).toBe(3);
    const events = ((await (await fetch(`${stack.guardian.url}/guardian/events`)).json()) as Json)
      .events as Json[];
    expect(events.filter((e) => e.kind === 'native_compaction').map((e) => e.outcome)).toEqual([
      'applied',
      'applied',
      'applied',
      'refused',
      'refused',
    ]);
    expect(events.filter((e) => e.kind === 'native_handle').map((e) => e.outcome)).toEqual(['invalid']);
  });
});
