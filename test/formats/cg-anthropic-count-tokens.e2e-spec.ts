import Anthropic from '@anthropic-ai/sdk';

import { startStack } from '../support/stack';
import { prose } from './support/session-text';

const WINDOW = 6000;
const RESERVE = 1000;
const BUDGET = Math.min(Math.floor(WINDOW * 0.85), WINDOW - RESERVE);

/** A history of `turns` user/assistant pairs of prose, then a question. */
function body(turns: number, words: number): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [];
  for (let t = 1; t <= turns; t++) {
    messages.push({ role: 'user', content: `Turn ${t}. ${prose(t, words)}` });
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `Turn ${t} done.` }] });
  }
  messages.push({ role: 'user', content: 'And now?' });
  return { model: 'stub-model', max_tokens: 500, system: 'Be brief.', messages };
}

describe('exact counting on /v1/messages near the budget', () => {
  it('asks the upstream count_tokens with the client key and trusts its answer over the estimate', async () => {
    const stack = await startStack({
      stub: { flavor: 'anthropic', window: WINDOW },
      env: {
        GUARDIAN_NUM_CTX: String(WINDOW),
        GUARDIAN_RESERVE_OUTPUT: String(RESERVE),
        GUARDIAN_CALIBRATE: '0',
      },
    });
    try {
      // Prose costs the stub about 2 tokens a word; the 3.5 chars/token estimate says a few percent more. Find a
      // request whose estimate is just over the budget while its exact count is under it.
      let request: Record<string, unknown> | undefined;
      for (let words = 200; words < 400 && !request; words += 2) {
        const b = body(10, words);
        const exact = stack.stub.countPrompt(b, 'messages');
        const estimate = Math.ceil(JSON.stringify(b.messages).length / 3.5);
        if (exact < BUDGET && exact > BUDGET * 0.95 && estimate > BUDGET) request = b;
      }
      expect(request).toBeDefined();
      const sdk = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-ant-count' });
      await sdk.messages.create(request as never, { query: { beta: 'true' } });
      const counted = stack.stub.requests.filter((r) => r.route === 'count_tokens');
      expect(counted).toHaveLength(1);
      // This SDK version sends its apiKey as Authorization: Bearer; whichever credential came goes along.
      expect(counted[0]!.headers.authorization).toBe('Bearer sk-ant-count');
      // The exact count fits: the request went through as sent and no summary was made.
      expect(stack.stub.requests.some((r) => r.isSummary)).toBe(false);
      const forwarded = stack.stub.requests.filter((r) => r.route === 'messages').at(-1)!;
      expect(forwarded.body.toString('utf8')).toBe(JSON.stringify(request));
    } finally {
      await stack.close();
    }
  });
});
