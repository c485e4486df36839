import Anthropic from '@anthropic-ai/sdk';
import type {
  BetaContextManagementResponse,
  BetaMessage,
} from '@anthropic-ai/sdk/resources/beta/messages/messages';

import { samples, sumOf } from '../support/prom-text';
import { startStack, type Stack } from '../support/stack';

type Json = Record<string, any>;

const FACT = 'Remember this: the release branch is FACT-CTX-7731.';
const output = (n: number) =>
  `file ${n}:\n${`line of file ${n}, the handler reads the column back.\n`.repeat(40)}`;

/** A tool-heavy conversation: each turn reads a file, the newest user message asks about them. */
function toolConversation(uses: number, opts: { thinking?: boolean } = {}): Json[] {
  const messages: Json[] = [{ role: 'user', content: `${FACT} Read the files one by one.` }];
  for (let i = 1; i <= uses; i++) {
    const thinking = opts.thinking
      ? [{ type: 'thinking', thinking: `reasoning ${i} `.repeat(30), signature: 's' }]
      : [];
    messages.push({
      role: 'assistant',
      content: [
        ...thinking,
        {
          type: 'tool_use',
          id: `t${i}`,
          name: i % 3 === 0 ? 'grep' : 'read_file',
          input: { path: `src/f${i}.ts` },
        },
      ],
    });
    messages.push({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: output(i) }],
    });
  }
  messages.push({ role: 'assistant', content: 'I have read them all.' });
  messages.push({ role: 'user', content: 'Which release branch do we use?' });
  return messages;
}

const BETA = { betas: ['context-management-2025-06-27', 'compact-2026-01-12'] };

describe('Anthropic context management served for a backend that has none (issue 27 item 2)', () => {
  let stack: Stack;
  let sdk: Anthropic;

  beforeAll(async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: 65536 } });
    sdk = new Anthropic({ baseURL: stack.baseURL.replace(/\/v1$/, ''), apiKey: 'sk-ant-ctx' });
  });
  afterAll(() => stack.close());

  const forwarded = (): Json[] =>
    stack.stub.requests.filter((r) => r.route === 'messages' && !r.isSummary).map((r) => r.json as Json);
  const resultsOf = (body: Json): Record<string, string> =>
    Object.fromEntries(
      (body.messages as Json[])
        .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
        .filter((b: Json) => b.type === 'tool_result')
        .map((b: Json) => [b.tool_use_id, String(b.content)]),
    );

  it('clear_tool_uses: the old results go, the calls and the newest results stay, applied_edits says so', async () => {
    stack.stub.reset();
    const res = (await sdk.beta.messages.create({
      model: 'stub-model',
      max_tokens: 64,
      messages: toolConversation(6) as any,
      context_management: {
        edits: [
          {
            type: 'clear_tool_uses_20250919',
            trigger: { type: 'input_tokens', value: 500 },
            keep: { type: 'tool_uses', value: 2 },
            exclude_tools: ['grep'],
            clear_tool_inputs: ['read_file'],
          },
        ],
      },
      ...BETA,
    })) as BetaMessage;
    const report: BetaContextManagementResponse | null = res.context_management;
    expect(report?.applied_edits).toHaveLength(1);
    const edit = report!.applied_edits[0]!;
    expect(edit.type).toBe('clear_tool_uses_20250919');
    // t1, t2, t4 are cleared: t3 is grep (excluded), t5 and t6 are the newest two.
    expect(edit.type === 'clear_tool_uses_20250919' && edit.cleared_tool_uses).toBe(3);
    expect(edit.cleared_input_tokens).toBeGreaterThan(0);

    const [sent] = forwarded();
    expect(sent).toBeDefined();
    expect(sent!).not.toHaveProperty('context_management');
    const results = resultsOf(sent!);
    for (const id of ['t1', 't2', 't4']) expect(results[id]).toContain('cleared');
    for (const id of ['t3', 't5', 't6']) expect(results[id]).toBe(output(Number(id.slice(1))));
    const calls = (sent!.messages as Json[])
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((b: Json) => b.type === 'tool_use');
    expect(calls).toHaveLength(6);
    expect(calls.find((c: Json) => c.id === 't1').input).toEqual({});
    expect(calls.find((c: Json) => c.id === 't6').input).toEqual({ path: 'src/f6.ts' });
  });

  it('under its trigger nothing is cleared, and the field still never reaches the backend', async () => {
    stack.stub.reset();
    const res = (await sdk.beta.messages.create({
      model: 'stub-model',
      max_tokens: 64,
      messages: toolConversation(6) as any,
      context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
      ...BETA,
    })) as BetaMessage;
    expect(res.context_management?.applied_edits).toEqual([]);
    const [sent] = forwarded();
    expect(sent!).not.toHaveProperty('context_management');
    expect(resultsOf(sent!).t1).toBe(output(1));
  });

  it("clear_thinking keeps the newest turns' thinking, and the streamed message_delta reports both edits", async () => {
    stack.stub.reset();
    const stream = sdk.beta.messages.stream({
      model: 'stub-model',
      max_tokens: 64,
      messages: toolConversation(4, { thinking: true }) as any,
      context_management: {
        edits: [
          { type: 'clear_thinking_20251015', keep: { type: 'thinking_turns', value: 1 } },
          {
            type: 'clear_tool_uses_20250919',
            trigger: { type: 'tool_uses', value: 2 },
            keep: { type: 'tool_uses', value: 1 },
          },
        ],
      },
      ...BETA,
    });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('end_turn');
    expect(final.context_management?.applied_edits).toEqual([
      {
        type: 'clear_thinking_20251015',
        cleared_thinking_turns: 3,
        cleared_input_tokens: expect.any(Number),
      },
      { type: 'clear_tool_uses_20250919', cleared_tool_uses: 3, cleared_input_tokens: expect.any(Number) },
    ]);
    const [sent] = forwarded();
    const thinking = (sent!.messages as Json[]).filter(
      (m) => Array.isArray(m.content) && m.content.some((b: Json) => b.type === 'thinking'),
    );
    expect(thinking).toHaveLength(1);
    expect(JSON.stringify(thinking[0])).toContain('reasoning 4');
  });

  it('refuses what Anthropic refuses: clear_thinking after another edit, an unknown edit', async () => {
    const status = (edits: unknown[]) =>
      sdk.beta.messages
        .create({
          model: 'stub-model',
          max_tokens: 8,
          messages: toolConversation(1) as any,
          context_management: { edits } as any,
          ...BETA,
        })
        .then(
          () => 0,
          (e: InstanceType<typeof Anthropic.APIError>) => e.status,
        );
    stack.stub.reset();
    expect(await status([{ type: 'clear_tool_uses_20250919' }, { type: 'clear_thinking_20251015' }])).toBe(
      400,
    );
    expect(await status([{ type: 'clear_everything' }])).toBe(400);
    expect(stack.stub.requests).toHaveLength(0);
  });

  const compactEdits = (pause: boolean, instructions?: string) => ({
    edits: [
      {
        type: 'compact_20260112' as const,
        trigger: { type: 'input_tokens' as const, value: 800 },
        pause_after_compaction: pause,
        ...(instructions ? { instructions } : {}),
      },
    ],
  });

  it('compact_20260112: over its trigger the answer opens with a readable compaction block, then the turn', async () => {
    stack.stub.reset();
    const res = (await sdk.beta.messages.create({
      model: 'stub-model',
      max_tokens: 64,
      messages: toolConversation(5) as any,
      context_management: compactEdits(false),
      ...BETA,
    })) as Json;
    expect(res.content.map((b: Json) => b.type)).toEqual(['compaction', 'text']);
    expect(res.content[0].content).toContain('FACT-CTX-7731');
    expect(res.content[0].signature).toMatch(/^cg2\./);
    expect(res.stop_reason).toBe('end_turn');
    expect(res.usage.iterations.map((i: Json) => i.type)).toEqual(['compaction', 'message']);
    const [sent] = forwarded();
    // The backend answered the summary and the question, not the tool results.
    expect(sent!.messages).toHaveLength(1);
    expect(JSON.stringify(sent)).toContain('FACT-CTX-7731');
    expect(JSON.stringify(sent)).toContain('Which release branch');
    expect(Object.keys(resultsOf(sent!))).toHaveLength(0);

    // The answer sent back as the client appends it: what came before the block is dropped, its text forwarded.
    stack.stub.reset();
    await sdk.beta.messages.create({
      model: 'stub-model',
      max_tokens: 64,
      messages: [
        ...toolConversation(5),
        { role: 'assistant', content: res.content },
        { role: 'user', content: 'And the next step?' },
      ] as any,
      ...BETA,
    });
    const [next] = forwarded();
    expect(next!.messages.map((m: Json) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(JSON.stringify(next)).toContain('FACT-CTX-7731');
    expect(JSON.stringify(next)).not.toContain('"compaction"');
    expect(Object.keys(resultsOf(next!))).toHaveLength(0);
  });

  it("compact_20260112 streamed: the block is the first content block, the answer's indexes follow it", async () => {
    stack.stub.reset();
    const final = (await sdk.beta.messages
      .stream({
        model: 'stub-model',
        max_tokens: 64,
        messages: toolConversation(5) as any,
        context_management: compactEdits(false),
        ...BETA,
      })
      .finalMessage()) as Json;
    expect(final.content.map((b: Json) => b.type)).toEqual(['compaction', 'text']);
    expect(final.content[0].content).toContain('FACT-CTX-7731');
    expect(final.content[1].text.length).toBeGreaterThan(0);
  });

  it('compact_20260112 with pause_after_compaction answers the block alone, stop_reason compaction', async () => {
    stack.stub.reset();
    const res = (await sdk.beta.messages.create({
      model: 'stub-model',
      max_tokens: 64,
      messages: toolConversation(5) as any,
      context_management: compactEdits(true),
      ...BETA,
    })) as Json;
    expect(res.stop_reason).toBe('compaction');
    expect(res.content.map((b: Json) => b.type)).toEqual(['compaction']);
    expect(forwarded()).toHaveLength(0);
  });

  it("compact_20260112 instructions reach the summariser, after guardian's own", async () => {
    stack.stub.reset();
    const messages = toolConversation(5);
    messages[0]!.content = `${FACT} Read the files one by one (instructions run).`;
    const res = (await sdk.beta.messages.create({
      model: 'stub-model',
      max_tokens: 64,
      messages: messages as any,
      context_management: compactEdits(true, 'List every file path read, one per line.'),
      ...BETA,
    })) as Json;
    expect(res.stop_reason).toBe('compaction');
    const asked = stack.stub.requests.filter((r) => r.isSummary).map((r) => JSON.stringify(r.json));
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((text) => text.includes('List every file path read, one per line.'))).toBe(true);
    expect(asked[0]).toContain('## Must Keep');
  });

  it('streamed, the message_delta event carries context_management as BetaRawMessageDeltaEvent has it', async () => {
    const deltas = async (context_management: unknown, messages: Json[]): Promise<Json[]> => {
      const events = await sdk.beta.messages.create({
        model: 'stub-model',
        max_tokens: 64,
        stream: true,
        messages: messages as any,
        context_management: context_management as any,
        ...BETA,
      });
      const out: Json[] = [];
      for await (const event of events) if (event.type === 'message_delta') out.push(event);
      return out;
    };
    stack.stub.reset();
    const cleared = await deltas(
      { edits: [{ type: 'clear_tool_uses_20250919', trigger: { type: 'tool_uses', value: 1 } }] },
      toolConversation(5),
    );
    expect(cleared).toHaveLength(1);
    expect(cleared[0]!.context_management).toEqual({
      applied_edits: [
        { type: 'clear_tool_uses_20250919', cleared_tool_uses: 2, cleared_input_tokens: expect.any(Number) },
      ],
    });
    // Paused after a threshold compaction: guardian answers the block itself, its message_delta says what was applied.
    const paused = await deltas(compactEdits(true), toolConversation(5));
    expect(paused).toHaveLength(1);
    expect(paused[0]!.delta.stop_reason).toBe('compaction');
    expect(paused[0]!.context_management).toEqual({ applied_edits: [] });
  });

  it('counts each mechanism by what it did, and tells the events feed what changed', async () => {
    const all = samples(await (await fetch(`${stack.guardian.url}/metrics`)).text());
    const native = (entry: string, outcome: string) =>
      sumOf(all, 'guardian_native_requests_total', { entry, outcome });
    expect(native('clear_tool_uses', 'applied')).toBeGreaterThanOrEqual(2);
    expect(native('clear_tool_uses', 'not_needed')).toBeGreaterThanOrEqual(1);
    expect(native('clear_thinking', 'applied')).toBeGreaterThanOrEqual(1);
    expect(native('messages_threshold', 'applied')).toBeGreaterThanOrEqual(4);
    expect(native('clear_thinking', 'refused') + native('clear_tool_uses', 'refused')).toBeGreaterThanOrEqual(
      1,
    );
    const events = ((await (await fetch(`${stack.guardian.url}/guardian/events`)).json()) as Json)
      .events as Json[];
    const told = new Set(
      events.filter((e) => e.kind === 'native_compaction').map((e) => `${e.entry}:${e.outcome}`),
    );
    expect([...told]).toEqual(
      expect.arrayContaining([
        'clear_tool_uses:applied',
        'clear_thinking:applied',
        'messages_threshold:applied',
      ]),
    );
    expect(told.has('clear_tool_uses:not_needed')).toBe(false);
  });
});
