import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import OpenAI from 'openai';

import { parseVerifierKey, verifyTlogProof } from '@guardian/archive';

import { samples, sumOf } from '../support/prom-text';
import { startStack, type Stack } from '../support/stack';

type Json = Record<string, any>;

const FACT = 'Remember this: the release branch is FACT-THRESH-4417.';
const RULE = 'Always use pnpm, never npm.';
const filler = (n: number) =>
  `Step ${n}: ${'the parser reads the schema, the handler retries the queue, the cache keeps the cursor. '.repeat(6)}`;

/** About 2,000 tokens: the fact pinned and a standing instruction in its first user message. */
function conversation(turns: number): Json[] {
  const items: Json[] = [
    { type: 'message', role: 'developer', content: 'You are a careful coding assistant.' },
    { type: 'message', role: 'user', content: `${FACT} ${RULE} ${filler(0)}` },
  ];
  for (let i = 1; i <= turns; i++) {
    items.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: filler(i) }] });
    items.push({ type: 'message', role: 'user', content: `Continue with part ${i}. ${filler(i)}` });
  }
  return items;
}

/** Crossed by conversation(6), not by what a compacted turn sends afterwards. */
const THRESHOLD = 1200;
const MANAGED = [{ type: 'compaction', compact_threshold: THRESHOLD }];

const handleClaims = (handle: string): Json =>
  JSON.parse(Buffer.from(handle.split('.')[1]!, 'base64url').toString('utf8')) as Json;

describe('Responses context_management compaction served for a backend that has none (issue 27 item 1)', () => {
  let stack: Stack;
  let sdk: OpenAI;

  beforeAll(async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: 16384 } });
    sdk = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-native', maxRetries: 0 });
  });
  afterAll(() => stack.close());

  const forwarded = (): Json[] =>
    stack.stub.requests.filter((r) => r.route === 'responses' && !r.isSummary).map((r) => r.json as Json);
  const summaries = () => stack.stub.requests.filter((r) => r.isSummary).length;

  it('over the threshold: the compaction item first, the turn answered; sent back, the covered items go and the block comes', async () => {
    stack.stub.reset();
    const input = [...conversation(6), { role: 'user', content: 'Which branch do we release from?' }];
    const res = await sdk.responses.create({
      model: 'stub-model',
      input: input as any,
      context_management: MANAGED,
    });
    expect(res.output.map((o) => o.type)).toEqual(['compaction', 'message']);
    const item = res.output[0] as Json;
    expect(item.encrypted_content).toMatch(/^cg2\./);
    expect(handleClaims(item.encrypted_content).k).toBe('t');
    expect(summaries()).toBe(1);
    // The backend answered the instructions, guardian's block and the newest question: not the field, not the item,
    // not the conversation the block stands for.
    const sent = forwarded();
    expect(sent).toHaveLength(1);
    expect(sent[0]).not.toHaveProperty('context_management');
    const roles = (sent[0]!.input as Json[]).map((i) => i.role);
    expect(roles).toEqual(['developer', 'developer', 'user']);
    const block = JSON.stringify(sent[0]!.input[1]);
    expect(block).toContain('CONTEXT-GUARDIAN-ARCHIVE');
    expect(block).toContain(FACT);
    expect(JSON.stringify(sent[0])).not.toContain('Continue with part 3');

    // The client appends the output and asks on (OpenAI's guide: the items before the item may be dropped, or not).
    stack.stub.reset();
    const next = await sdk.responses.create({
      model: 'stub-model',
      input: [...input, ...res.output, { role: 'user', content: 'And which package manager?' }] as any,
      context_management: MANAGED,
    });
    expect(next.output.map((o) => o.type)).toEqual(['message']);
    expect(summaries()).toBe(0);
    const again = forwarded()[0]!;
    const types = (again.input as Json[]).map((i) => `${i.type ?? 'message'}:${i.role ?? ''}`);
    expect(types).toEqual(['message:developer', 'message:developer', 'message:assistant', 'message:user']);
    expect(JSON.stringify(again)).toContain(FACT);
    expect(JSON.stringify(again)).not.toContain('"compaction"');
    expect(JSON.stringify(again)).not.toContain('Continue with part 3');
  });

  it("a second threshold compaction of a compacted conversation still carries the first one's pins and ledger", async () => {
    const more = (from: number): Json[] =>
      Array.from({ length: 6 }, (_, k) => [
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: filler(from + k) }] },
        { type: 'message', role: 'user', content: `Then part ${from + k}. ${filler(from + k)}` },
      ]).flat();
    const first = [...conversation(6), { role: 'user', content: 'Which branch?' }];
    const one = await sdk.responses.create({
      model: 'stub-model',
      input: first as any,
      context_management: MANAGED,
    });
    const second = [...first, ...one.output, ...more(20), { role: 'user', content: 'And now?' }];
    stack.stub.reset();
    const two = await sdk.responses.create({
      model: 'stub-model',
      input: second as any,
      context_management: MANAGED,
    });
    expect(two.output.map((o) => o.type)).toEqual(['compaction', 'message']);
    // One block goes on: the first is summarised with the rest, not kept as an instruction beside the second.
    expect(JSON.stringify(forwarded()[0]).split('CONTEXT-GUARDIAN-ARCHIVE>>>')).toHaveLength(2);
    stack.stub.reset();
    await sdk.responses.create({
      model: 'stub-model',
      input: [two.output[0] as any, { role: 'user', content: 'Remind me of the branch and the rule.' }],
    });
    const block = (forwarded()[0]!.input[0].content[0] as Json).text as string;
    // Carried whole from the first block, as the user wrote them.
    expect(block).toContain(`\n- ${FACT}\n`);
    expect(block).toContain(`\n- ${RULE}\n`);
    expect(block).not.toContain('- - ');
  });

  it('streamed: the item is announced first at output_index 0, the turn follows at 1, and the sequence stays whole', async () => {
    stack.stub.reset();
    const stream = await sdk.responses.create({
      model: 'stub-model',
      stream: true,
      input: [...conversation(6), { role: 'user', content: 'Which branch?' }] as any,
      context_management: MANAGED,
    });
    const events: Json[] = [];
    for await (const e of stream) events.push(e);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const firstItem = events.findIndex((e) => e.type === 'response.output_item.added');
    expect(
      events.slice(0, firstItem).every((e) => /^response\.(created|in_progress|queued)$/.test(e.type)),
    ).toBe(true);
    const items = events.filter((e) => e.type === 'response.output_item.done');
    expect(items.map((e) => [e.output_index, e.item.type])).toEqual([
      [0, 'compaction'],
      [1, 'message'],
    ]);
    expect(
      events
        .filter((e) => 'output_index' in e && e.type.startsWith('response.output_text'))
        .every((e) => e.output_index === 1),
    ).toBe(true);
    const done = events.at(-1)!;
    expect(done.type).toBe('response.completed');
    expect(done.response.output.map((o: Json) => o.type)).toEqual(['compaction', 'message']);
    // The SDK's own accumulator builds the same response from the events.
    const final = await sdk.responses
      .stream({
        model: 'stub-model',
        input: [...conversation(6), { role: 'user', content: 'Which branch, once more?' }] as any,
        context_management: MANAGED,
      } as any)
      .finalResponse();
    expect(final.output.map((o) => o.type)).toEqual(['compaction', 'message']);
  });

  it('under the threshold nothing is compacted and nothing is added to the answer', async () => {
    stack.stub.reset();
    const res = await sdk.responses.create({
      model: 'stub-model',
      input: conversation(1) as any,
      context_management: MANAGED,
    });
    expect(res.output.map((o) => o.type)).toEqual(['message']);
    expect(summaries()).toBe(0);
    expect(forwarded()[0]).not.toHaveProperty('context_management');
  });

  it('refuses a context_management entry of another type, as OpenAI does, and forwards nothing', async () => {
    stack.stub.reset();
    const err = await sdk.responses
      .create({
        model: 'stub-model',
        input: conversation(1) as any,
        context_management: [{ type: 'truncate_everything' }],
      } as any)
      .catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect(stack.stub.requests).toHaveLength(0);
  });

  it('the block carries the pins and the instruction ledger', async () => {
    const compacted = await sdk.responses.compact({ model: 'stub-model', input: conversation(6) as any });
    stack.stub.reset();
    await sdk.responses.create({
      model: 'stub-model',
      input: [compacted.output.at(-1) as any, { role: 'user', content: 'go on' }],
    });
    const block = JSON.stringify(forwarded()[0]!.input[0]);
    expect(block).toContain("Pinned facts (kept verbatim at the user's request):");
    expect(block).toContain(FACT);
    expect(block).toContain('Standing instructions from the user, verbatim, newest first:');
    expect(block).toContain(RULE);
  });

  it('the handle names the log checkpoint that covers its span, and the archive proves the entry under it', async () => {
    const compacted = await sdk.responses.compact({ model: 'stub-model', input: conversation(5) as any });
    const claims = handleClaims((compacted.output.at(-1) as Json).encrypted_content);
    expect(claims.o).toBeNull();
    const log = claims.l as { n: string; i: number; z: number; r: string; d: string };
    expect(log).toEqual({
      n: expect.stringMatching(/^[A-Za-z0-9_-]+$/),
      i: expect.any(Number),
      z: expect.any(Number),
      r: expect.any(String),
      d: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const [run, file] = (claims.h as string).split('/') as [string, string];
    // The span file is the one the entry vouches for.
    const bytes = readFileSync(join(stack.dataDir, 'spans', run, file));
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(log.d);
    // A holder fetches the span's proof and the log's key from the sidecar and checks the entry against them.
    const span = (await (
      await fetch(`${stack.guardian.url}/guardian/archive/runs/${run}/spans/${Number(file.slice(0, -5))}`)
    ).json()) as Json;
    const entry = `context-guardian span ${run} ${Number(file.slice(0, -5))} sha256:${log.d}`;
    expect(span.log_entry).toBe(entry);
    const vkey = await (await fetch(`${stack.guardian.url}/guardian/archive/logs/${log.n}/vkey`)).text();
    const checked = verifyTlogProof(span.log_proof, entry, parseVerifierKey(vkey));
    expect(checked).toMatchObject({ ok: true, index: log.i });
    // The checkpoint the handle names is this one or an earlier one of the same log.
    if (!checked.ok) throw new Error(checked.reason);
    expect(checked.checkpoint.size).toBeGreaterThanOrEqual(log.z);
    if (checked.checkpoint.size === log.z) expect(checked.checkpoint.root.toString('base64')).toBe(log.r);
  });

  it('counts every entry point and tells the events feed', async () => {
    const text = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    const all = samples(text);
    const native = (entry: string, outcome: string) =>
      sumOf(all, 'guardian_native_requests_total', { entry, outcome });
    expect(native('responses_threshold', 'applied')).toBeGreaterThanOrEqual(3);
    expect(native('responses_threshold', 'not_needed')).toBeGreaterThanOrEqual(2);
    expect(native('responses_threshold', 'refused')).toBe(1);
    expect(native('responses_compact', 'applied')).toBe(2);
    expect(sumOf(all, 'guardian_native_handles_total', { route: 'responses', outcome: 'memo' })).toBe(4);
    // Every series is there from boot, at 0 until it happens.
    expect(native('messages_on_demand', 'applied')).toBe(0);
    expect(
      all.some((s) => s.name === 'guardian_native_handles_total' && s.labels.outcome === 'foreign'),
    ).toBe(true);
    // The compact endpoint is answered by guardian itself.
    expect(sumOf(all, 'guardian_requests_total', { route: 'responses', outcome: 'served' })).toBe(2);
    const events = ((await (await fetch(`${stack.guardian.url}/guardian/events`)).json()) as Json)
      .events as Json[];
    const kinds = events.filter((e) => e.kind === 'native_compaction').map((e) => `${e.entry}:${e.outcome}`);
    expect(kinds).toEqual(
      expect.arrayContaining([
        'responses_threshold:applied',
        'responses_threshold:refused',
        'responses_compact:applied',
      ]),
    );
    expect(kinds).not.toContain('responses_threshold:not_needed');
  });
});
