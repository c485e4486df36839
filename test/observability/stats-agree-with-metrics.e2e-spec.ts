import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

import { filler, getJson, type Json } from '../compaction/support';
import { samples, sumOf as sum, type Sample } from '../support/prom-text';
import { startStack, type Stack } from '../support/stack';

// Issue 18: `/guardian/stats` and `/metrics` count the same things, and an operator who reads one beside the other
// must see the same numbers. Each stats counter is read here next to the Prometheus series it reports, after real
// sessions through the OpenAI SDK that compact, reuse a summary, carry pins, spill a paste and (with a model that
// cannot summarise) retry a summary and let a checkpoint stand in.

/** A conversation that grows past the 8,192-token window twice, with a pin, then a big paste in a second one. */
async function session(stack: Stack): Promise<void> {
  const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
  const history: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You help with a migration.' }];
  for (let turn = 1; turn <= 16; turn++) {
    const pin = turn === 2 ? ' Remember this: the tenant id is T-4411.' : '';
    history.push({ role: 'user', content: `Step ${turn}.${pin}\n${filler(turn, 420)}` });
    const res = await client.chat.completions.create({ model: 'stub-model', messages: history });
    history.push({ role: 'assistant', content: res.choices[0]?.message.content ?? '' });
  }
  await client.chat.completions.create({
    model: 'stub-model',
    messages: [
      { role: 'system', content: 'You review logs.' },
      { role: 'user', content: `BEGIN\n${filler(99, 5200)}\nEND` },
    ],
  });
}

async function both(stack: Stack): Promise<{ stats: Json; all: Sample[] }> {
  const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
  const text = await (await fetch(`${stack.guardian.url}/metrics`)).text();
  return { stats, all: samples(text) };
}

/** Every stats counter that has a Prometheus series, read side by side. */
function pairs(stats: Json, all: Sample[]): Record<string, [unknown, number]> {
  const failOpen = stats.fail_open as Record<string, number>;
  const precompact = stats.precompact as Record<string, number>;
  return {
    compactions_performed: [stats.compactions_performed, sum(all, 'guardian_compactions_total')],
    summaries_reused: [stats.summaries_reused, sum(all, 'guardian_summaries_reused_total')],
    summaries_chunked: [stats.summaries_chunked, sum(all, 'guardian_summaries_chunked_total')],
    summary_retries: [stats.summary_retries, sum(all, 'guardian_summariser_retries_total')],
    summariser_calls: [stats.summariser_calls, sum(all, 'guardian_summariser_duration_seconds_count')],
    oversized_spills: [stats.oversized_spills, sum(all, 'guardian_oversized_spills_total')],
    compactions_with_pins: [stats.compactions_with_pins, sum(all, 'guardian_compactions_with_pins_total')],
    last_pins_carried: [stats.last_pins_carried, sum(all, 'guardian_pins_carried')],
    archive_deferred: [stats.archive_deferred, sum(all, 'guardian_archive_deferred_total')],
    overflow_recovered: [
      stats.overflow_recovered,
      sum(all, 'guardian_overflow_recoveries_total', { outcome: 'ok' }),
    ],
    backend_truncations: [stats.backend_truncations, sum(all, 'guardian_backend_truncation_total')],
    'precompact.done': [precompact.done, sum(all, 'guardian_precompact_total', { outcome: 'done' })],
    'precompact.used': [precompact.used, sum(all, 'guardian_precompact_total', { outcome: 'used' })],
    'precompact.failed': [precompact.failed, sum(all, 'guardian_precompact_total', { outcome: 'failed' })],
    ...Object.fromEntries(
      Object.entries(failOpen).map(([stage, n]) => [
        `fail_open.${stage}`,
        [n, sum(all, 'guardian_fail_open_total', { stage })],
      ]),
    ),
  };
}

function disagreements(p: Record<string, [unknown, number]>): string[] {
  return Object.entries(p)
    .filter(([, [stats, metric]]) => stats !== metric)
    .map(([key, [stats, metric]]) => `${key}: stats ${String(stats)}, metrics ${metric}`);
}

describe('/guardian/stats and /metrics agree', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('after sessions that compact, reuse a summary, carry a pin and spill a paste', async () => {
    stack = await startStack({ stub: { window: 8192 }, env: { GUARDIAN_RESERVE_OUTPUT: '1024' } });
    await session(stack);
    const { stats, all } = await both(stack);
    const p = pairs(stats, all);
    expect(disagreements(p)).toEqual([]);
    expect(p.compactions_performed![1]).toBeGreaterThan(1);
    expect(p.summaries_reused![1]).toBeGreaterThan(0);
    expect(p.oversized_spills![1]).toBeGreaterThan(0);
    expect(p.compactions_with_pins![1]).toBeGreaterThan(0);
  });

  it('after a session whose model cannot summarise (retries, checkpoints)', async () => {
    stack = await startStack({
      stub: { window: 8192, shortSummaries: true },
      env: { GUARDIAN_RESERVE_OUTPUT: '1024' },
    });
    await session(stack);
    const { stats, all } = await both(stack);
    const p = pairs(stats, all);
    expect(disagreements(p)).toEqual([]);
    expect(p.summary_retries![1]).toBeGreaterThan(0);
  });
});
