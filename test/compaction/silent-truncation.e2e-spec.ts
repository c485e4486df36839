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

  it('chat, a calibrated model on the fast path: caught within two truncated answers, and the next request fits', async () => {
    // The audit of issue 28 (Done-when 3): a conversation that starts small calibrates the model, then grows past the
    // backend's real window while every request still fits the window guardian believes. Those requests take the
    // fast path (ADR 0013), which never checked the answer's count: three truncated answers in a row went unnoticed.
    stack = await startStack({
      stub: { flavor: 'ollama', window: REAL_WINDOW, truncate: true },
      env: { GUARDIAN_NUM_CTX: '32768' },
    });
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    const counter = stack.guardian.app.get(RequestCounter);
    const stats = async (): Promise<Json> => (await getJson(`${stack!.guardian.url}/guardian/stats`)).body;
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You review migration notes.' },
    ];
    const ask = async (t: number, words: number): Promise<void> => {
      messages.push({ role: 'user', content: `Notes ${t}:\n${filler(t, words)}` });
      const answer = await client.chat.completions.create({ model: MODEL, messages });
      expect(answer.choices[0]?.message.content).toMatch(/^ok: /);
      messages.push({ role: 'assistant', content: `Reviewed ${t}.` });
    };
    // Small turns until the model is calibrated (the samples are taken behind each answer).
    let t = 0;
    while (!counter.isCalibrated(MODEL)) await ask(++t, 60);
    const calibrated = counter.counterFor(MODEL).factor;

    // Then a paste of about 1,700 tokens a turn, until the second answer the stub truncated.
    const truncated: { turn: number; bySize: boolean }[] = [];
    while (truncated.length < 2 && t < 40) {
      const before = Number((await stats()).passthrough_by_size);
      await ask(++t, 1300);
      const sent = forwarded(stack.stub).at(-1)!;
      const bySize = Number((await stats()).passthrough_by_size) === before + 1;
      if (sent.truncated) truncated.push({ turn: t, bySize });
    }
    // Both went the fast path, the one this checks; the guardian window (32,768) was never in doubt for them.
    expect(truncated.map((x) => x.bySize)).toEqual([true, true]);
    // Nothing else is sent until it is detected: one of those two answers told guardian.
    await until('the backend_truncation event', async () =>
      (await events(stack!)).some((e) => e.kind === 'backend_truncation'),
    );
    const now = await stats();
    expect({
      truncations: now.backend_truncations,
      window: now.num_ctx,
      source: now.window_source,
    }).toEqual({ truncations: 1, window: REAL_WINDOW, source: 'learned:truncation' });
    expect({ calibrated: counter.isCalibrated(MODEL), factor: counter.counterFor(MODEL).factor }).toEqual({
      calibrated: true,
      factor: calibrated,
    });

    // The next request is compacted to the learned window, and the stub answers it whole.
    await ask(++t, 60);
    expectNextFits(stack);
  });
});
