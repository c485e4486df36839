import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { startTeamStack, TOKENS, type TeamStack, type Who } from './support';

type Json = Record<string, any>;

// Team mode (docs/team.md): a compaction handle names the developer whose request made it (cg2), and another
// developer's request that sends it is refused in the route's own error shape, never expanded (issue 27 item 3).

const FACT = 'Remember this: the staging password rotates on FACT-TEAM-6620.';
const filler = (n: number) =>
  `Step ${n}: ${'the worker drains the queue and the cache keeps the cursor. '.repeat(6)}`;

function conversation(turns: number): Json[] {
  const items: Json[] = [{ role: 'user', content: `${FACT} ${filler(0)}` }];
  for (let i = 1; i <= turns; i++) {
    items.push({ role: 'assistant', content: filler(i) });
    items.push({ role: 'user', content: `Part ${i}. ${filler(i)}` });
  }
  return items;
}

describe("a developer cannot expand another developer's compaction handle", () => {
  let stack: TeamStack;
  beforeAll(async () => {
    stack = await startTeamStack();
  });
  afterAll(() => stack?.close());

  const openai = (who: Who) =>
    new OpenAI({
      baseURL: stack.baseURL,
      apiKey: 'sk-upstream',
      maxRetries: 0,
      defaultHeaders: { 'x-guardian-token': TOKENS[who] },
    });
  const anthropic = (who: Who) =>
    new Anthropic({
      baseURL: stack.guardian.url,
      apiKey: 'sk-ant',
      maxRetries: 0,
      defaultHeaders: { 'x-guardian-token': TOKENS[who] },
    });

  it("Responses: alice's handle expands for alice; bob gets 403 GUARDIAN_COMPACTION_HANDLE_FOREIGN and nothing is forwarded", async () => {
    const compacted = await openai('alice').responses.compact({
      model: 'stub-model',
      input: conversation(5) as any,
    });
    const item = compacted.output.at(-1) as Json;
    const next = (who: Who) =>
      openai(who).responses.create({
        model: 'stub-model',
        input: [item as any, { role: 'user', content: 'go on' }],
      });

    stack.stub.reset();
    await next('alice');
    expect(JSON.stringify(stack.stub.requests.at(-1)!.json)).toContain('FACT-TEAM-6620');

    stack.stub.reset();
    const err = await next('bob').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('GUARDIAN_COMPACTION_HANDLE_FOREIGN');
    expect(stack.stub.requests).toHaveLength(0);
  });

  it("Anthropic: bob cannot send alice's readable block either, though its text is plain to read", async () => {
    const res = (await anthropic('alice').beta.messages.create({
      model: 'stub-model',
      max_tokens: 64,
      messages: conversation(5) as any,
      compaction: { type: 'summarize' },
      betas: ['compact-2026-09-04'],
    } as any)) as Json;
    const block = res.content[0];
    stack.stub.reset();
    const err = await anthropic('bob')
      .beta.messages.create({
        model: 'stub-model',
        max_tokens: 64,
        messages: [
          { role: 'assistant', content: [block] },
          { role: 'user', content: 'go on' },
        ] as any,
        betas: ['compact-2026-09-04'],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { code: 'GUARDIAN_COMPACTION_HANDLE_FOREIGN' },
    });
    expect(stack.stub.requests).toHaveLength(0);
  });

  it("the refusals are counted, and only the refused developer's events show them", async () => {
    const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    expect(metrics).toMatch(/guardian_native_handles_total\{route="responses",outcome="foreign"\} 1/);
    expect(metrics).toMatch(/guardian_native_handles_total\{route="messages",outcome="foreign"\} 1/);
    const bob = await stack.get('/guardian/events', 'bob');
    const alice = await stack.get('/guardian/events', 'alice');
    const foreign = (events: Json[]) =>
      events.filter((e) => e.kind === 'native_handle' && e.outcome === 'foreign').length;
    expect(foreign(bob.body.events as Json[])).toBe(2);
    expect(foreign(alice.body.events as Json[])).toBe(0);
  });
});
