import OpenAI from 'openai';

import type { StubFlavor } from '@guardian/stub-backend';

import { startStack, type Stack } from '../support/stack';
import { eventually, filler, forwarded, getJson, type Json } from './support';

/** Streams one request without asking for usage, so /guardian/usage shows guardian's own count_source. */
async function streamOnce(stack: Stack, content: string): Promise<string> {
  const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'stub-model',
    stream: true,
    messages: [
      { role: 'system', content: 'You review migration notes.' },
      { role: 'user', content },
    ],
  });
  const parts: string[] = [];
  for await (const chunk of stream) parts.push(chunk.choices[0]?.delta.content ?? '');
  return parts.join('');
}

async function usage(stack: Stack): Promise<Json> {
  return eventually(async () => {
    const r = await getJson(`${stack.guardian.url}/guardian/usage`);
    return r.status === 200 ? r.body : undefined;
  });
}

describe('counting near the budget with the upstream /tokenize', () => {
  // Budget = min(floor(8192 x 0.85), 8192 - 1024) = 6963; this request's estimate lands within 15% below it.
  const env = { GUARDIAN_RESERVE_OUTPUT: '1024', GUARDIAN_TOKENIZE_TIMEOUT_MS: '60000' };
  const nearBudget = (seed: number): string => filler(seed, 3000);

  it('counts a near-budget request exactly with vLLM /tokenize (count_source tokenize)', async () => {
    const stack = await startStack({ stub: { flavor: 'vllm', window: 8192 }, env });
    try {
      const text = await streamOnce(stack, nearBudget(1));
      expect(text).toMatch(/^ok: /);
      const tokenized = stack.stub.requests.filter((r) => r.route === 'tokenize');
      expect(tokenized).toHaveLength(1);
      const u = await usage(stack);
      expect(u.count_source).toBe('tokenize');
      // The exact count is what the stub counted for the tokenize call.
      expect(u.used_after_compaction).toBe(tokenized[0]!.promptTokens);
    } finally {
      await stack.close();
    }
  });

  it('falls back to the estimate when /tokenize answers after GUARDIAN_TOKENIZE_TIMEOUT_MS, and still answers', async () => {
    const stack = await startStack({
      stub: { flavor: 'vllm', window: 8192, tokenizeDelayMs: 1500 },
      env: { ...env, GUARDIAN_TOKENIZE_TIMEOUT_MS: '150' },
    });
    try {
      const text = await streamOnce(stack, nearBudget(2));
      expect(text).toMatch(/^ok: /);
      expect(forwarded(stack.stub).map((r) => r.status)).toEqual([200]);
      const u = await usage(stack);
      expect(['estimate', 'calibrated']).toContain(u.count_source);
    } finally {
      await stack.close();
    }
  });

  it('does not ask /tokenize when the estimate is far from the budget', async () => {
    const stack = await startStack({ stub: { flavor: 'vllm', window: 8192 }, env });
    try {
      await streamOnce(stack, 'a short question about the ledger export');
      expect(stack.stub.requests.filter((r) => r.route === 'tokenize')).toHaveLength(0);
      expect((await usage(stack)).count_source).toBe('estimate');
    } finally {
      await stack.close();
    }
  });
});

describe('window detection per backend (/guardian/stats windows)', () => {
  const flavors: StubFlavor[] = ['vllm', 'llamacpp', 'ollama', 'lmstudio', 'litellm'];

  async function windowsAfterOneRequest(
    opts: Parameters<typeof startStack>[0],
  ): Promise<{ windows: Json; stats: Json; stub: number }> {
    const stack = await startStack(opts);
    try {
      await streamOnce(stack, 'hello');
      const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
      return { windows: stats.windows as Json, stats, stub: stack.stub.window };
    } finally {
      await stack.close();
    }
  }

  it.each(flavors)('detects the %s window from its own endpoint', async (flavor) => {
    const { windows, stats, stub } = await windowsAfterOneRequest({ stub: { flavor, window: 12288 } });
    expect(windows['stub-model']).toEqual({ window: stub, source: `detected:${flavor}` });
    expect(stats.num_ctx).toBe(stub);
    expect(stats.window_source).toBe(`detected:${flavor}`);
  });

  it('lets GUARDIAN_NUM_CTX win over detection (source env)', async () => {
    const { windows } = await windowsAfterOneRequest({
      stub: { flavor: 'vllm', window: 12288 },
      env: { GUARDIAN_NUM_CTX: '20000' },
    });
    expect(windows['stub-model']).toEqual({ window: 20000, source: 'env' });
  });

  it('falls back to 32768 (source default) when the upstream has no discovery endpoint', async () => {
    const { windows } = await windowsAfterOneRequest({ stub: { flavor: 'none', window: 12288 } });
    expect(windows['stub-model']).toEqual({ window: 32768, source: 'default' });
  });
});
