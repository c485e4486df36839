import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

import { computeBudget } from '@guardian/compaction';

import { startStack, type Stack } from '../support/stack';
import { forwarded } from './support';

/**
 * Issue 11 finding 6: before five usage samples the calibration factor was 1, so against a backend that counts more
 * tokens than characters / 3.5 (Codex's text: 9% more) the first compactions went out over the budget, eating the
 * output reserve. Now the budget keeps a margin until the first sample, and a sample above 1 applies at once.
 * No exact count here (the backend has no /tokenize), so only the estimate and its calibration decide.
 */
const WINDOW = 16384;
const BUDGET = computeBudget(WINDOW, 0.85, 8192).budget;

/**
 * Text the backend's tokenizer counts about 9% denser than characters / 3.5, as with Codex's: three two-letter ids
 * (one token each) and a six-letter word (two tokens) in every 16 characters.
 */
function dense(seed: number, chars: number): string {
  const a = 'abcdefghijklmnopqrstuvwxyz';
  let out = '';
  for (let i = 0; out.length < chars; i++) {
    const c = (k: number) => a[(i * 7 + seed * 3 + k) % 26]!;
    out += `${c(0)}${c(1)} ${c(2)}${c(3)} ${c(4)}${c(5)} ${c(6)}${c(7)}${c(8)}${c(9)}${c(10)}${c(11)} `;
  }
  return out.slice(0, chars);
}

describe('the first compactions, before calibration has its samples, against a backend that counts ~10% more', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({
      stub: { window: WINDOW, tokenize: false },
      env: { GUARDIAN_NUM_CTX: String(WINDOW) },
    });
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    const history: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You review logs.' }];
    // Turn 1 is already over the budget (a big paste): the first decision has no usage sample at all.
    for (let turn = 1; turn <= 6; turn++) {
      history.push({
        role: 'user',
        content: `Review step ${turn}.\n${dense(turn, turn === 1 ? 40_000 : 9_000)}`,
      });
      const res = await client.chat.completions.create({ model: 'stub-model', messages: history });
      history.push({ role: 'assistant', content: res.choices[0]?.message.content ?? '' });
    }
  });

  afterAll(async () => {
    await stack.close();
  });

  it('is a backend whose count runs above the estimate', () => {
    const text = dense(1, 10_000);
    const ratio = stack.stub.countTokens(text) / Math.ceil(text.length / 3.5);
    expect(ratio).toBeGreaterThan(1.07);
    expect(ratio).toBeLessThan(1.1);
  });

  it('forwards every request within the budget by the backend own count, the first ones included', () => {
    const sent = forwarded(stack.stub);
    expect(sent).toHaveLength(6);
    expect(sent.map((r) => r.status)).toEqual(new Array<number>(6).fill(200));
    const over = sent
      .map((r, i) => ({ turn: i + 1, tokens: r.promptTokens! }))
      .filter((r) => r.tokens > BUDGET);
    expect(over).toEqual([]);
  });
});
