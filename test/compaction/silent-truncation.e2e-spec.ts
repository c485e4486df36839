import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

import { RequestCounter } from '../../apps/guardian/src/compaction/request/request-counter';
import { startStack, type Stack } from '../support/stack';
import { until } from '../support/wait';
import { filler, forwarded, getJson, type Json } from './support';

// Issue 28 item 5. The stub's real window is 4096 and it truncates silently (Ollama past num_ctx: 200, the front of
// the prompt cut, the kept count reported); guardian is told 16384, so it forwards about 10,000 tokens unchanged.
const REAL_WINDOW = 4096;
const WRONG_ENV = { GUARDIAN_NUM_CTX: '16384', GUARDIAN_RESERVE_OUTPUT: '1024' };
const MODEL = 'stub-model';

function notes(turns: number): { user: string; assistant: string }[] {
  return Array.from({ length: turns }, (_, i) => ({
    user: `Notes for step ${i + 1}:\n${filler(i + 1, 330)}`,
    assistant: `Step ${i + 1} reviewed; the ledger export is consistent.`,
  }));
}

async function events(stack: Stack): Promise<Json[]> {
  return (await getJson(`${stack.guardian.url}/guardian/events`)).body.events as Json[];
}

/** What the first (truncated) request must leave behind, whichever route carried it. */
async function expectDetected(stack: Stack, route: string): Promise<void> {
  const first = forwarded(stack.stub);
  expect(first.map((r) => [r.status, r.truncated])).toEqual([[200, true]]);
  // The event is raised behind the answer: wait for it, then look at what guardian now believes.
  await until('the backend_truncation event', async () =>
    (await events(stack)).some((e) => e.kind === 'backend_truncation'),
  );
  const event = (await events(stack)).find((e) => e.kind === 'backend_truncation')!;
  expect(event).toMatchObject({
    route,
    model: MODEL,
    reported_tokens: REAL_WINDOW,
    learned_window: REAL_WINDOW,
  });
  expect(event.forwarded_tokens as number).toBeGreaterThan(REAL_WINDOW / 0.6);
  const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
  expect({
    truncations: stats.backend_truncations,
    window: stats.num_ctx,
    source: stats.window_source,
  }).toEqual({ truncations: 1, window: REAL_WINDOW, source: 'learned:truncation' });
  const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
  expect(metrics).toContain(`guardian_backend_truncation_total{model="${MODEL}"} 1`);
  // Calibration unchanged: the truncated count was not taken as a sample (it would have taught a factor of ~0.4).
  const counter = stack.guardian.app.get(RequestCounter);
  expect({ unproven: counter.unproven(MODEL), factor: counter.counterFor(MODEL).factor }).toEqual({
    unproven: true,
    factor: 1,
  });
}

/** The second request is compacted to the learned window: the stub answers it whole. */
function expectNextFits(stack: Stack): void {
  const next = forwarded(stack.stub).at(-1)!;
  expect({ status: next.status, truncated: next.truncated ?? false }).toEqual({
    status: 200,
    truncated: false,
  });
  expect(next.promptTokens!).toBeLessThanOrEqual(REAL_WINDOW);
}

describe('a backend that truncates the prompt without saying so', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('chat: is detected on the first answer, is not calibrated from, and the next request fits its window', async () => {
    stack = await startStack({
      stub: { flavor: 'ollama', window: REAL_WINDOW, truncate: true },
      env: WRONG_ENV,
    });
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You review migration notes.' },
    ];
    for (const t of notes(14))
      messages.push({ role: 'user', content: t.user }, { role: 'assistant', content: t.assistant });
    messages.push({ role: 'user', content: 'What should we check next?' });
    expect(stack.stub.countPrompt({ messages }, 'chat')).toBeGreaterThan(REAL_WINDOW / 0.6);

    const first = await client.chat.completions.create({ model: MODEL, messages });
    expect(first.choices[0]?.message.content).toMatch(/^ok: /);
    await expectDetected(stack, 'chat');

    messages.push(
      { role: 'assistant', content: 'Check the export.' },
      { role: 'user', content: 'And then?' },
    );
    const second = await client.chat.completions.create({ model: MODEL, messages });
    expect(second.choices[0]?.message.content).toMatch(/^ok: /);
    expectNextFits(stack);
  });

  it('messages: the same through the Anthropic SDK, streamed', async () => {
    stack = await startStack({
      stub: { flavor: 'ollama', window: REAL_WINDOW, truncate: true },
      env: WRONG_ENV,
    });
    const client = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-ant-test', maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [];
    for (const t of notes(14))
      messages.push({ role: 'user', content: t.user }, { role: 'assistant', content: t.assistant });
    messages.push({ role: 'user', content: 'What should we check next?' });
    const ask = () =>
      client.messages
        .stream({ model: MODEL, max_tokens: 256, system: 'You review migration notes.', messages })
        .finalMessage();

    expect((await ask()).content[0]?.type).toBe('text');
    await expectDetected(stack, 'messages');
    messages.push(
      { role: 'assistant', content: 'Check the export.' },
      { role: 'user', content: 'And then?' },
    );
    expect((await ask()).content[0]?.type).toBe('text');
    expectNextFits(stack);
  });
});
