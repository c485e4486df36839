import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

import { startStack, type Stack } from '../support/stack';
import {
  filler,
  forwarded,
  getJson,
  messagesOf,
  pinsIn,
  summaryBlock,
  summaryCalls,
  textOf,
} from './support';

/**
 * Issue 11 finding 3: the summary block listed every span reference ever archived, so with the defaults and an 8,192
 * window a 1,000-turn session's system message grew from ~6 KB to ~38 KB and from turn ~656 every request was refused
 * by the backend. What guardian adds must stay bounded whatever the session length (ARCHITECTURE.md#compaction).
 */
const TURNS = 1000;
const WINDOW = 8192;
const PIN = 'Remember this: the deploy key is FACT-DEPLOY-1000.';
const SYSTEM = 'You are a careful engineer keeping a long migration log.';

function userTurn(turn: number): string {
  if (turn === 1) return `We start the migration. ${PIN}\n${filler(1, 40)}`;
  // Every 25th turn pastes a log of about 3 KB; the others are a short note.
  return turn % 25 === 0
    ? `Log for step ${turn}:\n${filler(turn, 500)}`
    : `Step ${turn}: ${filler(turn, 45)}`;
}

describe(`a ${TURNS}-turn session through the OpenAI SDK at an ${WINDOW}-token window, with the defaults`, () => {
  let stack: Stack;
  const statuses: number[] = [];

  beforeAll(async () => {
    stack = await startStack({ stub: { window: WINDOW, maxRecorded: 4 * TURNS } });
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    const history: ChatCompletionMessageParam[] = [{ role: 'system', content: SYSTEM }];
    for (let turn = 1; turn <= TURNS; turn++) {
      history.push({ role: 'user', content: userTurn(turn) });
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

  it('answers every turn, each forwarded once and inside the window', () => {
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    const sent = forwarded(stack.stub);
    expect(sent).toHaveLength(TURNS);
    expect(sent.filter((r) => r.status !== 200)).toEqual([]);
    expect(Math.max(...sent.map((r) => r.promptTokens ?? 0))).toBeLessThanOrEqual(WINDOW);
  });

  it('keeps what it adds bounded: the system message near turn 1,000 is no bigger than near turn 300', () => {
    const systemChars = forwarded(stack.stub).map((r) => textOf(messagesOf(r)[0]!).length);
    const early = Math.max(...systemChars.slice(200, 300));
    const late = Math.max(...systemChars.slice(-100));
    // A few more digits in the counts ("999 earlier span(s)") are all the growth there may be.
    expect(late).toBeLessThanOrEqual(early + 8);
    // The block names at most five spans, and says where the rest are.
    const last = summaryBlock(forwarded(stack.stub).at(-1)!)!;
    expect((last.match(/\d{4,}\.json/g) ?? []).length).toBeLessThanOrEqual(5);
    expect(last).toMatch(/\d+ earlier span\(s\) are not named here/);
  });

  it('carries the pinned fact in every compacted request to the end', () => {
    const blocks = forwarded(stack.stub)
      .map(summaryBlock)
      .filter((b): b is string => b !== undefined);
    expect(blocks.length).toBeGreaterThan(TURNS / 2);
    for (const b of blocks) expect(pinsIn(b)).toContain(PIN);
  });

  it('makes one summariser call per stretch, many turns reusing each', async () => {
    const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
    const calls = summaryCalls(stack.stub).length;
    expect(stats.summaries_reused).toBeGreaterThan(calls);
    expect(stats.summary_retries).toBe(0);
    expect(stats.fail_open).toEqual(expect.objectContaining({ summarise: 0, internal: 0 }));
  });
});
