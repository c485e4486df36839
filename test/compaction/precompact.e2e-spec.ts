import { join } from 'node:path';

import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

import type { StubBackend } from '@guardian/stub-backend';

import { startRedis, type TestRedis } from '../support/redis';
import { startStack, type Stack } from '../support/stack';
import {
  filler,
  forwarded,
  getJson,
  messagesOf,
  readSpans,
  spanRefsIn,
  summaryBlock,
  summaryCalls,
  type Json,
} from './support';
import { setTimeout as pause } from 'node:timers/promises';

import { until } from '../support/wait';

/**
 * Issue 14: with pre-compaction on, the stretch the next cut will evict is summarised in the background after an
 * answer, so the turn that crosses the budget reuses it and no client waits on the summariser.
 */
const WINDOW = 8192;
// Summaries made ahead of need are what these tests check; clearing old tool results in the foreground first
// (issue 32 item 3) would answer their over-budget turns without one.
const ON = {
  GUARDIAN_PRECOMPACT_THRESHOLD: '0.8',
  GUARDIAN_RESERVE_OUTPUT: '4096',
  GUARDIAN_CLEAR_TOOL_RESULTS: '0',
};
/** (window - reserve) / 2 with ON's reserve: guardian's input budget. */
const BUDGET = 4096;

function userTurn(turn: number): string {
  return turn === 1
    ? `We migrate the billing service. Remember this: the deploy key is FACT-PRE-14.\n${filler(1, 300)}`
    : `Step ${turn}: ${filler(turn, 300)}`;
}

interface Precompact {
  done: number;
  used: number;
  failed: number;
  running: number;
  wasted: number;
}

async function stats(url: string): Promise<Json & { precompact: Precompact; summary_waits: number }> {
  return (await getJson(`${url}/guardian/stats`)).body as Json & {
    precompact: Precompact;
    summary_waits: number;
  };
}

/** What a person does between turns: reads the answer. Meanwhile the background job, if any, finishes. */
async function idle(url: string): Promise<void> {
  await until(
    'the background pre-compaction to finish',
    async () => (await stats(url)).precompact.running === 0,
  );
}

/** Sends `turns` turns through the OpenAI SDK, pausing after each; returns when each request left the client. */
async function converse(
  baseURL: string,
  url: string,
  turns: number,
  edit?: (history: ChatCompletionMessageParam[], turn: number) => void,
): Promise<{ sentAt: number[]; history: ChatCompletionMessageParam[] }> {
  const client = new OpenAI({ baseURL, apiKey: 'sk-test', maxRetries: 0 });
  const history: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You are a careful engineer.' }];
  const sentAt: number[] = [];
  for (let turn = 1; turn <= turns; turn++) {
    history.push({ role: 'user', content: userTurn(turn) });
    edit?.(history, turn);
    sentAt.push(performance.now());
    const res = await client.chat.completions.create({ model: 'stub-model', messages: history });
    history.push({ role: 'assistant', content: res.choices[0]?.message.content ?? '' });
    await idle(url);
  }
  return { sentAt, history };
}

/** Summary calls that reached the stub while a client request was on its way to it (the request path). */
function summariesOnRequestPath(stub: StubBackend, sentAt: readonly number[]): number {
  const generations = forwarded(stub);
  const calls = summaryCalls(stub);
  return generations.filter((g, i) =>
    calls.some((c) => c.receivedAt >= (sentAt[i] ?? Infinity) && c.receivedAt <= g.receivedAt),
  ).length;
}

describe('pre-compaction on: a 24-turn session at an 8,192 window', () => {
  let stack: Stack;
  let sentAt: number[];
  let history: ChatCompletionMessageParam[];

  beforeAll(async () => {
    stack = await startStack({ stub: { window: WINDOW, summaryDelayMs: 150 }, env: ON });
    ({ sentAt, history } = await converse(stack.baseURL, stack.guardian.url, 24));
  });
  afterAll(async () => {
    await stack.close();
  });

  it('compacts with summaries made in the background, and no client request waits on one', async () => {
    const s = await stats(stack.guardian.url);
    const blocks = forwarded(stack.stub)
      .map(summaryBlock)
      .filter((b) => b !== undefined);
    expect(blocks.length).toBeGreaterThan(8);
    expect(summaryCalls(stack.stub).length).toBeGreaterThan(1);
    expect(summariesOnRequestPath(stack.stub, sentAt)).toBe(0);
    expect(s.summary_waits).toBe(0);
    expect(s.precompact.done).toBe(summaryCalls(stack.stub).length);
    expect(s.precompact.used).toBeGreaterThan(0);
    for (const b of blocks) expect(b).toContain('FACT-PRE-14');
  });

  it('archives each evicted message once, in order, when a request first reuses its summary', async () => {
    const last = forwarded(stack.stub).at(-1)!;
    const tail = messagesOf(last).filter((m) => m.role !== 'system');
    // The client's history up to the last request (the answer to it was appended after).
    const sent = JSON.parse(JSON.stringify(history.slice(0, -1))) as Json[];
    const spans = (await readSpans(join(stack.dataDir, 'spans'))).filter((sp) => !sp.oversized);
    expect(spans.flatMap((sp) => sp.messages)).toEqual(sent.slice(1, sent.length - tail.length));
    const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    expect(metrics).toMatch(/guardian_precompact_total\{outcome="used"\} [1-9]/);
  });
});

describe('a turn that needs the stretch still being summarised in the background', () => {
  // Issue 30 item 5: on healthy runs 6 of 84 forwarded requests said "the archive could not be written". In an agent's
  // tool loop the next request comes at once, and its cut is the background job's (cuts fall only before a user
  // message): it took the job's summary as made ahead of need, archived nothing, and the block read that unarchived
  // entry as a failed write.
  it('archives the stretch itself, and its block names the span instead of a write that failed', async () => {
    const stack = await startStack({
      stub: { window: WINDOW },
      env: { ...ON, GUARDIAN_KEEP_RECENT_MESSAGES: '4' },
    });
    try {
      const hold = stack.stub.holdSummaries();
      let summarising = false;
      void hold.arrived.then(() => (summarising = true));
      const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
      const history: ChatCompletionMessageParam[] = [
        { role: 'system', content: 'You are a careful engineer.' },
      ];
      const tokensWith = (more: ChatCompletionMessageParam[]) =>
        stack.stub.countPrompt({ model: 'stub-model', messages: [...history, ...more] }, 'chat');
      const send = () => client.chat.completions.create({ model: 'stub-model', messages: history });
      // Plain turns up to about two thirds of the budget.
      for (let turn = 1; tokensWith([{ role: 'user', content: userTurn(turn) }]) < 2_700; turn++) {
        history.push({ role: 'user', content: userTurn(turn) });
        history.push({ role: 'assistant', content: (await send()).choices[0]?.message.content ?? '' });
      }
      history.push({ role: 'user', content: 'Run the test suite and fix what fails.' });
      // Then a tool loop: each request ends in a tool's result, and its answer is the next call.
      let call = 0;
      const round = (): ChatCompletionMessageParam[] => [
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `call_${++call}`,
              type: 'function',
              function: { name: 'bash', arguments: '{"cmd":"npm test"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: `call_${call}`, content: `Run ${call}: ${filler(call, 60)}` },
      ];
      while (!summarising) {
        if (call > 40) throw new Error('no background summary started in 40 tool rounds');
        history.push(...round());
        await send();
        await until(
          'the background summary to start, or no job',
          async () => summarising || (await stats(stack.guardian.url)).precompact.running === 0,
        );
      }
      // Rounds still under the budget are answered while the job is held; the first over it needs that stretch.
      for (let next = round(); tokensWith(next) <= BUDGET; next = round()) {
        history.push(...next);
        await send();
      }
      history.push(...round());
      const reply = send();
      // It cannot be answered before the summary is let go; the pause gives it time to reach the summary under way.
      // Whether it did or not, what is asserted below holds.
      await Promise.race([reply, pause(1_000)]);
      hold.release();
      await reply;
      await idle(stack.guardian.url);
      expect(summaryCalls(stack.stub)).toHaveLength(1);
      const block = summaryBlock(forwarded(stack.stub).at(-1)!);
      expect(block).toBeDefined();
      expect(block).not.toContain('could not be written');
      expect(block).not.toContain('not archived yet');
      const named = spanRefsIn(block!);
      expect(named.length).toBeGreaterThan(0);
      const written = (await readSpans(join(stack.dataDir, 'spans'))).map((sp) => sp.ref);
      for (const ref of named) expect(written).toContain(ref);
      const s = await stats(stack.guardian.url);
      expect(s.precompact).toMatchObject({ done: 1, used: 1 });
      expect(s.archive_deferred).toBe(0);
    } finally {
      await stack.close();
    }
  });
});

describe('a session that carries two conversations', () => {
  // Qwen Code sends a side request with its own system prompt and tools every turn, in the same session. With one
  // background job per session, the side request's job was refused as busy behind the main one's, and its next cut
  // waited on the summariser in the foreground.
  it('makes each conversation its summary ahead, so neither waits', async () => {
    // Turns of one size and one answer: the summary made ahead is the one the next turn takes, every time. The
    // summariser takes a while, so the main conversation's job is still under way when the side request is answered.
    const stack = await startStack({
      stub: { window: WINDOW, reply: () => ({ text: 'Noted; go on.' }), summaryDelayMs: 400 },
      env: ON,
    });
    const sameSize = (turn: number): string => `Step ${String(turn).padStart(2, '0')}: ${filler(7, 300)}`;
    try {
      const send = async (messages: ChatCompletionMessageParam[]): Promise<string> => {
        const res = await fetch(`${stack.baseURL}/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer sk-test',
            'x-guardian-session': 'one-developer-one-task',
          },
          body: JSON.stringify({ model: 'stub-model', messages }),
        });
        expect(res.status).toBe(200);
        const body = (await res.json()) as { choices: { message: { content: string } }[] };
        return body.choices[0]?.message.content ?? '';
      };
      const main: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You are a careful engineer.' }];
      const side: ChatCompletionMessageParam[] = [
        { role: 'system', content: 'Say whether the engineer should speak next.' },
      ];
      for (let turn = 1; turn <= 20; turn++) {
        for (const history of [main, side]) {
          history.push({ role: 'user', content: sameSize(turn) });
          history.push({ role: 'assistant', content: await send(history) });
        }
        await idle(stack.guardian.url);
      }
      const s = await stats(stack.guardian.url);
      const blocks = forwarded(stack.stub).map(summaryBlock);
      // Both conversations were compacted (the side one's requests are the odd ones) ...
      expect(blocks.filter((b, i) => b !== undefined && i % 2 === 0).length).toBeGreaterThan(4);
      expect(blocks.filter((b, i) => b !== undefined && i % 2 === 1).length).toBeGreaterThan(4);
      // ... each with summaries made behind its own answers: no job was refused as busy, no request waited.
      const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
      expect(metrics).toMatch(/guardian_precompact_total\{outcome="busy"\} 0\n/);
      expect(summaryCalls(stack.stub)).toHaveLength(s.precompact.done);
      expect(s.summary_waits).toBe(0);
    } finally {
      await stack.close();
    }
  });
});

describe('pre-compaction off: the same session waits on the summariser at every new stretch', () => {
  it('makes its summary calls on the request path', async () => {
    const stack = await startStack({
      stub: { window: WINDOW, summaryDelayMs: 150 },
      env: { ...ON, GUARDIAN_PRECOMPACT_THRESHOLD: '0' },
    });
    try {
      const { sentAt } = await converse(stack.baseURL, stack.guardian.url, 24);
      const calls = summaryCalls(stack.stub).length;
      expect(calls).toBeGreaterThan(1);
      expect(summariesOnRequestPath(stack.stub, sentAt)).toBe(calls);
      expect((await stats(stack.guardian.url)).summary_waits).toBe(calls);
    } finally {
      await stack.close();
    }
  });
});

describe('pre-compaction when things go wrong', () => {
  it('a summariser that hangs in the background changes nothing for the client', async () => {
    const stack = await startStack({
      stub: { window: WINDOW, summaryDelayMs: 3_000 },
      env: { ...ON, GUARDIAN_SUMMARY_TIMEOUT_MS: '200' },
    });
    try {
      // converse() throws on any answer but a 200: every one of the 16 turns is answered.
      await converse(stack.baseURL, stack.guardian.url, 16);
      const s = await stats(stack.guardian.url);
      expect(s.precompact.failed).toBeGreaterThan(0);
      // The hung summariser's breaker opened, and checkpoints stood in for the summaries it could not write.
      expect((s.summariser_circuits as Record<string, Json>)['stub-model']).toMatchObject({ state: 'open' });
      expect(s.summary_checkpoints).toBeGreaterThan(0);
    } finally {
      await stack.close();
    }
  });

  it('drops a pre-computed summary when the history changes under it', async () => {
    const stack = await startStack({ stub: { window: WINDOW }, env: ON });
    try {
      // The client rewrites its first user message on the turn after a summary was made ahead of it: the summary no
      // longer matches the history, and nothing made before the edit is forwarded after it.
      const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
      const history: ChatCompletionMessageParam[] = [
        { role: 'system', content: 'You are a careful engineer.' },
      ];
      let edited: number | undefined;
      for (let turn = 1; turn <= 24 && edited === undefined; turn++) {
        history.push({ role: 'user', content: userTurn(turn) });
        const res = await client.chat.completions.create({ model: 'stub-model', messages: history });
        history.push({ role: 'assistant', content: res.choices[0]?.message.content ?? '' });
        await idle(stack.guardian.url);
        const s = await stats(stack.guardian.url);
        if (s.precompact.done > s.precompact.used) {
          edited = forwarded(stack.stub).length;
          history[1] = { role: 'user', content: `Edited: ${userTurn(1)}` };
        }
      }
      expect(edited).toBeDefined();
      for (let turn = 1; turn <= 4; turn++) {
        history.push({ role: 'user', content: `After the edit ${turn}: ${filler(turn + 40, 300)}` });
        const res = await client.chat.completions.create({ model: 'stub-model', messages: history });
        history.push({ role: 'assistant', content: res.choices[0]?.message.content ?? '' });
        await idle(stack.guardian.url);
      }
      const before = forwarded(stack.stub).slice(0, edited).map(summaryBlock);
      const after = forwarded(stack.stub).slice(edited);
      for (const block of after.map(summaryBlock).filter((b): b is string => b !== undefined))
        for (const old of before.filter((b): b is string => b !== undefined)) expect(block).not.toBe(old);
      // The one made ahead of the edit was never used.
      const s = await stats(stack.guardian.url);
      expect(s.precompact.done).toBeGreaterThan(s.precompact.used);
      expect(s.precompact.wasted).toBeGreaterThan(0);
    } finally {
      await stack.close();
    }
  });
});

describe('pre-compaction across two replicas sharing Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('makes one background call per stretch when both replicas see every turn', async () => {
    // A generous Redis bound: this test is about sharing the lock and the summaries. At the 50 ms default, a command
    // delayed by a busy machine falls back to the local memo (fail-soft, counted), and both replicas summarise.
    const env = {
      ...ON,
      GUARDIAN_REDIS_URL: redis.url,
      GUARDIAN_REDIS_PREFIX: `pre-${Date.now()}:`,
      GUARDIAN_REDIS_TIMEOUT_MS: '60000',
    };
    const a = await startStack({ stub: { window: WINDOW, summaryDelayMs: 150 }, env });
    const b = await startStack({ stub: { window: WINDOW, summaryDelayMs: 150 }, env });
    try {
      const client = (s: Stack) => new OpenAI({ baseURL: s.baseURL, apiKey: 'sk-test', maxRetries: 0 });
      const history: ChatCompletionMessageParam[] = [
        { role: 'system', content: 'You are a careful engineer.' },
      ];
      for (let turn = 1; turn <= 20; turn++) {
        history.push({ role: 'user', content: userTurn(turn) });
        // The same turn reaches both replicas at once (a client retried through a Service, or two tabs).
        const [ra] = await Promise.all(
          [a, b].map((s) => client(s).chat.completions.create({ model: 'stub-model', messages: history })),
        );
        history.push({ role: 'assistant', content: ra?.choices[0]?.message.content ?? '' });
        await Promise.all([idle(a.guardian.url), idle(b.guardian.url)]);
      }
      const calls = [...summaryCalls(a.stub), ...summaryCalls(b.stub)];
      const [sa, sb] = [await stats(a.guardian.url), await stats(b.guardian.url)];
      // Every call was a background one, and no stretch was summarised twice: each call's transcript starts at a
      // message no other call's does.
      expect(calls.length).toBeGreaterThan(2);
      expect(sa.precompact.done + sb.precompact.done).toBe(calls.length);
      const firstLine = (c: (typeof calls)[number]) =>
        /\[(\d+)\] (user|assistant):/.exec(c.body.toString('utf8'))?.[1];
      expect(new Set(calls.map(firstLine)).size).toBe(calls.length);
      // Both replicas took the shared summaries: all but the last, made for a turn that never came.
      expect(sa.precompact.used + sb.precompact.used).toBeGreaterThanOrEqual(calls.length - 1);
      expect(sa.summary_waits + sb.summary_waits).toBe(0);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
