import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import type { UsageFigures, UsageSummaryAnswer } from '@guardian/client';
import { createLogger } from '@guardian/telemetry';

import type { CliIo } from '../../apps/cli/src/common/cli-io';
import { main as recall } from '../../apps/cli/src/recall/main';
import { startGuardian, type RunningGuardian } from '../../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../../apps/guardian/src/config/guardian-config';
import type { Stack } from '../support/stack';
import { until } from '../support/wait';
import { overBudgetChat, startWindowStack, WINDOW_ENV } from './support';

// Issue 31 item 3: tokens in and out as the backend reported them, and what summaries cost, per model, for 24 h and
// 7 d, from the usage log on the volume. Driven through the official SDKs on the chat and messages routes, streamed
// and not, against the stub, which reports usage like vLLM does; the figures must equal what the clients were told,
// what the stub answered the summariser, `recall --savings`, and the bounded Prometheus series, and survive a restart.

const PRICES = { GUARDIAN_COST_PER_1M_INPUT_USD: '2', GUARDIAN_COST_PER_1M_OUTPUT_USD: '10' };
const WORDS = ['ledger', 'replica', 'cursor', 'timeout', 'invoice', 'handler', 'rollback', 'tenant'];

/** Ten user turns of about 900 tokens: over the 6,963-token budget of WINDOW_ENV, so the request compacts. */
function overBudgetMessages(tag: string): Anthropic.MessageParam[] {
  const out: Anthropic.MessageParam[] = [];
  for (let turn = 1; turn <= 10; turn++) {
    const words = Array.from({ length: 380 }, (_, i) => WORDS[(i * 5 + turn) % WORDS.length]).join(' ');
    out.push({ role: 'user', content: `Step ${turn} of ${tag}.\n${words}` });
    out.push({ role: 'assistant', content: `Checked step ${turn}.` });
  }
  out.push({ role: 'user', content: `What is left of ${tag}?` });
  return out;
}

async function savings(dataDir: string): Promise<Record<string, number>> {
  let out = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: () => undefined, isTTY: false },
    env: { GUARDIAN_DATA_DIR: dataDir, ...PRICES },
    home: dataDir,
    now: () => new Date(),
  };
  expect(await recall(['--savings', '--since', '24h', '--json'], io)).toBe(0);
  return JSON.parse(out) as Record<string, number>;
}

const FIELDS = [
  'answers',
  'answers_without_usage',
  'tokens_in',
  'tokens_out',
  'summariser_tokens_in',
  'summariser_tokens_out',
  'cost_usd',
] as const;
const pick = (f: Partial<Record<(typeof FIELDS)[number], number>> | undefined) =>
  Object.fromEntries(FIELDS.map((k) => [k, f?.[k]]));

describe('tokens in and out, and summariser tokens, from the backend usage', () => {
  let stack: Stack;
  let restarted: RunningGuardian | undefined;
  const told = { in: 0, out: 0 };

  beforeAll(async () => {
    stack = await startWindowStack(PRICES);
  });
  afterAll(async () => {
    await restarted?.close(200);
    await stack?.close();
  });

  async function summary(url: string): Promise<UsageSummaryAnswer> {
    const res = await fetch(`${url}/guardian/usage/summary`);
    expect(res.status).toBe(200);
    return (await res.json()) as UsageSummaryAnswer;
  }

  it('adds up what the clients were told and what the summariser was answered, per model', async () => {
    const openai = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test' });
    const claude = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-ant-test' });
    const chat = JSON.parse(overBudgetChat({ tag: 'usage-chat', model: 'chat-model' })) as {
      messages: OpenAI.ChatCompletionMessageParam[];
    };

    // chat, not streamed, over budget: a compaction and a summariser call.
    const a = await openai.chat.completions.create({
      model: 'chat-model',
      messages: chat.messages,
      max_tokens: 32,
    });
    told.in += a.usage?.prompt_tokens ?? NaN;
    told.out += a.usage?.completion_tokens ?? NaN;
    // chat, streamed, with include_usage: the last chunk carries it.
    const b = await openai.chat.completions.create({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'a short streamed question' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of b) {
      if (!chunk.usage) continue;
      told.in += chunk.usage.prompt_tokens;
      told.out += chunk.usage.completion_tokens;
    }
    // chat, streamed, without include_usage: answered, but the backend says nothing of its tokens.
    const c = await openai.chat.completions.create({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'streamed, no usage asked for' }],
      stream: true,
    });
    for await (const chunk of c) expect(chunk.usage ?? undefined).toBeUndefined();
    // messages, not streamed, over budget: a compaction and a summariser call on the Anthropic shape.
    const d = await claude.messages.create({
      model: 'claude-model',
      max_tokens: 64,
      messages: overBudgetMessages('usage-messages'),
    });
    told.in += d.usage.input_tokens;
    told.out += d.usage.output_tokens;
    // messages, streamed: output_tokens arrives in message_delta, after the first count in message_start.
    const e = await claude.messages
      .stream({
        model: 'claude-model',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'stream me a reply' }],
      })
      .finalMessage();
    told.in += e.usage.input_tokens;
    told.out += e.usage.output_tokens;

    const summaries = stack.stub.requests.filter((r) => r.isSummary);
    expect(summaries.length).toBeGreaterThanOrEqual(2);
    const summarised = {
      in: summaries.reduce((n, r) => n + (r.promptTokens ?? NaN), 0),
      out: summaries.reduce((n, r) => n + (r.completionTokens ?? NaN), 0),
    };
    // The lines are written behind each answer: read once all five are on the volume.
    await until('five answers in the usage log', async () => {
      const t = (await summary(stack.guardian.url)).periods['24h'].total;
      return t.answers === 5 && t.summariser_tokens_in === summarised.in;
    });
    const s = await summary(stack.guardian.url);
    expect([s.price_per_1m_input_usd, s.price_per_1m_output_usd]).toEqual([2, 10]);
    const total = s.periods['24h'].total;
    expect(pick(total)).toEqual({
      answers: 5,
      answers_without_usage: 1,
      tokens_in: told.in,
      tokens_out: told.out,
      summariser_tokens_in: summarised.in,
      summariser_tokens_out: summarised.out,
      cost_usd:
        Math.round((((told.in + summarised.in) * 2 + (told.out + summarised.out) * 10) / 1e6) * 10_000) /
        10_000,
    });
    expect(told.out).toBeGreaterThan(0);
    expect(summarised.out).toBeGreaterThan(0);
    expect(pick(s.periods['7d'].total)).toEqual(pick(total));

    // Per model: chat-model and claude-model each hold their own answers and summaries.
    const models = new Map<string, UsageFigures>(
      (s.periods['24h'].developers[0]?.models ?? []).map((m) => [m.model, m]),
    );
    expect([models.get('chat-model')?.answers, models.get('claude-model')?.answers]).toEqual([3, 2]);
    expect((models.get('chat-model')?.summariser_tokens_in ?? 0) > 0).toBe(true);
    expect((models.get('claude-model')?.summariser_tokens_in ?? 0) > 0).toBe(true);
    expect((models.get('chat-model')?.tokens_out ?? 0) + (models.get('claude-model')?.tokens_out ?? 0)).toBe(
      told.out,
    );

    // `recall --savings` reads the same logs on the volume and prices them by the same rule.
    expect(pick(await savings(stack.dataDir))).toEqual(pick(total));

    // The bounded series: period and kind only, no owner or model label.
    const text = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    for (const [kind, value] of [
      ['in', total.tokens_in],
      ['out', total.tokens_out],
      ['summariser_in', total.summariser_tokens_in],
      ['summariser_out', total.summariser_tokens_out],
    ] as const)
      expect(text).toContain(`guardian_usage_tokens{period="24h",kind="${kind}"} ${value}\n`);
    expect(text).toContain(`guardian_usage_answers{period="7d"} 5\n`);
    expect(text).toContain(`guardian_usage_cost_usd{period="24h"} ${total.cost_usd}\n`);
    for (const leak of ['chat-model', 'claude-model'])
      expect([leak, text.includes(leak)]).toEqual([leak, false]);
  });

  it('are still there after a restart on the same volume', async () => {
    const before = (await summary(stack.guardian.url)).periods['24h'].total;
    await stack.stopGuardian();
    const config = GuardianConfig.fromEnv(
      {
        ...WINDOW_ENV,
        ...PRICES,
        GUARDIAN_UPSTREAM_URL: stack.stub.baseUrl,
        GUARDIAN_DATA_DIR: stack.dataDir,
        GUARDIAN_LOG_LEVEL: 'silent',
        GUARDIAN_PRECOMPACT_THRESHOLD: '0',
        GUARDIAN_KEEPALIVE_MS: '0',
      },
      { version: 'test', home: stack.dataDir },
    );
    restarted = await startGuardian(config, createLogger({ level: 'silent' }), { port: 0 });
    expect(pick((await summary(restarted.url)).periods['24h'].total)).toEqual(pick(before));
  });
});
