import { countPrompt } from '@guardian/stub-backend';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

import { startStack, type Stack } from '../support/stack';
import { filler, forwarded, getJson, summaryCalls } from './support';

/**
 * ADR 0007: when the upstream has already refused a request as too long and the summariser fails too, the retry
 * carries a checkpoint written without a model instead of failing for certain. Outside recovery, fail-open stands.
 */
const REAL_WINDOW = 4096;

function history(): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You review migration notes.' }];
  for (let t = 1; t <= 8; t++) {
    out.push({ role: 'user', content: `Check step ${t} of the ledger migration. Notes:\n${filler(t, 330)}` });
    out.push({ role: 'assistant', content: `Step ${t} reviewed.` });
  }
  out.push({ role: 'user', content: 'What should we check next?' });
  return out;
}

describe('overflow recovery when the summariser fails', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('answers the client with a checkpoint instead of returning the upstream 400', async () => {
    // Every summary is "too short", so the summariser always fails (retried once, then given up).
    stack = await startStack({
      stub: { flavor: 'vllm', window: REAL_WINDOW },
      env: {
        GUARDIAN_NUM_CTX: '16384',
        GUARDIAN_RESERVE_OUTPUT: '1024',
        GUARDIAN_MIN_SUMMARY_CHARS: '100000',
      },
    });
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    const res = await client.chat.completions.create({ model: 'stub-model', messages: history() });
    expect(res.choices[0]?.message.content).toMatch(/^ok: /);

    const turn = forwarded(stack.stub);
    expect(turn.map((r) => r.status)).toEqual([400, 200]);
    const retry = JSON.parse(turn[1]!.body.toString('utf8')) as {
      messages: { role: string; content: string }[];
    };
    const system = retry.messages[0]!.content;
    expect(system).toContain('Checkpoint (no model-written summary was available)');
    expect(system).toContain('- user: Check step 1 of the ledger migration.');
    expect(system).toMatch(/The originals are archived as [A-Za-z0-9_-]+\/0001\.json/);
    expect(summaryCalls(stack.stub).length).toBeGreaterThan(0);
    const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
    expect(stats).toMatchObject({ summary_checkpoints: 1, overflow_recovered: 1 });
  });

  it('fails open outside recovery when the request fits the window, and remembers the checkpoint for later turns', async () => {
    const messages = history();
    const tokens = countPrompt({ messages }, 'chat');
    stack = await startStack({
      stub: { flavor: 'vllm', window: 65536 },
      env: {
        // Over the budget (0.7 of the request) but inside the window (1.2 of it): the upstream may take it as sent.
        GUARDIAN_NUM_CTX: String(Math.ceil(tokens * 1.2)),
        GUARDIAN_RESERVE_OUTPUT: String(Math.ceil(tokens * 0.5)),
        GUARDIAN_MIN_SUMMARY_CHARS: '100000',
      },
    });
    const body = JSON.stringify({ model: 'stub-model', messages });
    const res = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(200);
    expect(forwarded(stack.stub).at(-1)!.body.toString('utf8')).toBe(body);
    const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
    expect((stats.fail_open as Record<string, number>).summarise).toBe(1);
    // The next turn does not ask the failing model again: the memoized checkpoint stands in (issue 20).
    const calls = summaryCalls(stack.stub).length;
    const next = [...messages, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'And now?' }];
    const second = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'stub-model', messages: next }),
    });
    expect(second.status).toBe(200);
    await second.arrayBuffer();
    expect(summaryCalls(stack.stub)).toHaveLength(calls);
    expect(JSON.stringify(forwarded(stack.stub).at(-1)!.json)).toContain(
      'Checkpoint (no model-written summary was available)',
    );
  });
});
