import Anthropic from '@anthropic-ai/sdk';

import type { StubFlavor } from '@guardian/stub-backend';

import { startStack } from '../support/stack';
import { checkAnthropic, type Json } from './support/checks';

const WINDOW = 3000;

/**
 * Single-letter words: the stub's tokenizer counts each as a token, guardian's first estimate (3.5 characters per
 * token) sees about half that. So the request looks under budget, the upstream refuses it as too long, and only
 * the overflow answer can tell guardian how big it really is.
 */
function letters(turn: number, words: number): string {
  return Array.from({ length: words }, (_, i) => String.fromCharCode(97 + ((i * 7 + turn) % 26))).join(' ');
}

function history(): Json {
  const messages: Json[] = [];
  for (let turn = 1; turn <= 6; turn++) {
    messages.push({ role: 'user', content: `Turn ${turn}. ${letters(turn, 500)}` });
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `Turn ${turn} read.` }] });
  }
  messages.push({ role: 'user', content: 'What did we cover?' });
  return { model: 'stub-model', max_tokens: 500, system: 'Be brief.', messages };
}

// llama.cpp serves /v1/messages and answers an overflow there with its own body, not Anthropic's.
describe.each<StubFlavor>(['anthropic', 'llamacpp'])(
  'an overflow answer on /v1/messages (%s body)',
  (flavor) => {
    it('is recovered: the client gets an answer, the retry is compacted and valid', async () => {
      const stack = await startStack({
        stub: { flavor, window: WINDOW, tokenize: false },
        env: { GUARDIAN_NUM_CTX: String(WINDOW), GUARDIAN_RESERVE_OUTPUT: '500' },
      });
      try {
        const body = history();
        expect(stack.stub.countPrompt(body, 'messages')).toBeGreaterThan(WINDOW);
        const sdk = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-ant-o', maxRetries: 0 });
        const answer = await sdk.messages.create(body as never);
        expect(answer.content[0]).toMatchObject({ type: 'text' });

        const forwarded = stack.stub.requests.filter((r) => r.route === 'messages' && !r.isSummary);
        expect(forwarded.map((r) => r.status)).toEqual([400, 200]);
        expect(forwarded[0]!.body.toString('utf8')).toBe(JSON.stringify(body));
        const verdict = checkAnthropic(body, forwarded[1]!.json as Json);
        expect(verdict).toMatchObject({ compacted: true, problems: [] });
        expect(stack.stub.countPrompt(forwarded[1]!.json, 'messages')).toBeLessThanOrEqual(WINDOW);
      } finally {
        await stack.close();
      }
    });
  },
);
