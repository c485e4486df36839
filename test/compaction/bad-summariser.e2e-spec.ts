import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

import { BREAKER_FAILURES } from '../../apps/guardian/src/compaction/decide/summary-breaker';
import { startStack, type Stack } from '../support/stack';
import { filler, forwarded, getJson, summaryBlock, summaryCalls, type Json } from './support';

/**
 * Issue 20: a backend that cannot summarise (the tiny llama.cpp model; here the stub answering "Ok." to every summary
 * request, under GUARDIAN_MIN_SUMMARY_CHARS). A 40-turn session of ~700-character turns at a 4,096-token window
 * cost 102 summariser calls, 27 fail-opens and 24 requests refused by the backend: each turn past the budget asked
 * the model twice, forwarded a request known to exceed the window, and recovered from the 400 with a checkpoint.
 */
const TURNS = 40;
const WINDOW = 4096;

describe(`a ${TURNS}-turn session against a backend whose summaries are always too short`, () => {
  let stack: Stack;
  const statuses: number[] = [];

  beforeAll(async () => {
    stack = await startStack({
      stub: { window: WINDOW, shortSummaries: true, maxRecorded: 1000 },
      env: { GUARDIAN_RESERVE_OUTPUT: '512' },
    });
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    const history: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You keep a deploy log.' }];
    for (let turn = 1; turn <= TURNS; turn++) {
      const pin = turn === 1 ? 'Remember this: the rollback tag is FACT-ROLLBACK-20. ' : '';
      history.push({ role: 'user', content: `${pin}Step ${turn}: ${filler(turn, 100)}` });
      const res = await client.chat.completions
        .create({ model: 'stub-model', messages: history })
        .withResponse();
      statuses.push(res.response.status);
      history.push({ role: 'assistant', content: res.data.choices[0]?.message.content ?? '' });
    }
  });

  afterAll(async () => {
    await stack.close();
  });

  it('answers every turn and never forwards a request the window cannot hold', () => {
    expect(statuses).toEqual(new Array<number>(TURNS).fill(200));
    const sent = forwarded(stack.stub);
    expect(sent.filter((r) => r.status !== 200)).toEqual([]);
    expect(Math.max(...sent.map((r) => r.promptTokens ?? 0))).toBeLessThanOrEqual(WINDOW);
  });

  it('stops asking the model once it keeps failing: the calls are bounded by the breaker', async () => {
    // Each failed stretch asks twice (the summary, then once more when too short); then the breaker opens.
    expect(summaryCalls(stack.stub).length).toBeLessThanOrEqual(2 * BREAKER_FAILURES);
    const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
    expect((stats.summariser_circuits as Record<string, Json>)['stub-model']).toMatchObject({
      state: 'open',
    });
  });

  it('carries checkpoints that later turns reuse, with the pinned fact', async () => {
    const blocks = forwarded(stack.stub)
      .map(summaryBlock)
      .filter((b): b is string => b !== undefined);
    expect(blocks.length).toBeGreaterThan(TURNS / 2);
    for (const b of blocks) {
      expect(b).toContain('Checkpoint (no model-written summary was available)');
      expect(b).toContain('FACT-ROLLBACK-20');
    }
    const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
    expect(stats.summaries_reused).toBeGreaterThan(blocks.length / 2);
  });
});
