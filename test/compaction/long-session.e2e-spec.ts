import { join } from 'node:path';

import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';

import type { RecordedRequest, StubReply } from '@guardian/stub-backend';

import { startStack, type Stack } from '../support/stack';
import {
  filler,
  forwarded,
  getJson,
  messagesOf,
  pinsIn,
  readSpans,
  spanRefsIn,
  summaryBlock,
  summaryCalls,
  type Json,
} from './support';

const PIN = 'Remember this: the deploy key is FACT-DEPLOY-42.';
const TURNS = 30;

const TOOLS: ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'run_shell',
      description: 'Run a shell command in the repository',
      parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
    },
  },
];

/** The stub's scripted assistant: a user turn that asks for N tool calls gets N parallel calls, else text. */
function toolScript(): (req: RecordedRequest) => StubReply | undefined {
  let seq = 0;
  return (req) => {
    const msgs = messagesOf(req);
    const last = msgs.at(-1);
    const want = last?.role === 'user' ? /\[run (\d) commands\]/.exec(String(last.content)) : null;
    if (!want?.[1]) return { text: `Done with step ${msgs.length}; the ledger export looks consistent.` };
    const n = Number(want[1]);
    return {
      text: '',
      toolCalls: Array.from({ length: n }, (_, i) => ({
        id: `call_${++seq}`,
        name: 'run_shell',
        arguments: JSON.stringify({ cmd: `grep -rn retry src/worker-${seq}-${i}.ts` }),
      })),
    };
  };
}

function userTurn(turn: number): string {
  const head = turn === 1 ? `We start the billing migration today. ${PIN}` : `Notes for step ${turn}:`;
  const ask = turn % 3 === 0 ? `\n[run ${turn % 2 === 0 ? 3 : 1} commands]` : '';
  return `${head}\n${filler(turn, 190)}${ask}`;
}

describe('a 30-turn session with tool calls through the OpenAI SDK against a hard 8k window', () => {
  let stack: Stack;
  const history: ChatCompletionMessageParam[] = [
    {
      role: 'system',
      content: 'You are a careful engineer migrating a billing service. Use tools when asked.',
    },
  ];
  let lastSent: ChatCompletionMessageParam[] = [];
  let statuses: string[] = [];

  beforeAll(async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: 8192, reply: toolScript() },
      // One summariser call per stretch is what this session checks; clearing old tool results first (issue 32
      // item 3) is tested in tool-results-cleared.e2e-spec.ts.
      env: { GUARDIAN_RESERVE_OUTPUT: '1024', GUARDIAN_CLEAR_TOOL_RESULTS: '0' },
    });
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    statuses = [];
    for (let turn = 1; turn <= TURNS; turn++) {
      const prev = history.at(-1);
      if (prev?.role === 'assistant' && prev.tool_calls && prev.tool_calls.length > 0) {
        // Tool results answered out of order: the last call's result first.
        for (const call of [...prev.tool_calls].reverse()) {
          history.push({
            role: 'tool',
            tool_call_id: call.id,
            content: `$ output of ${call.id}\n${filler(turn * 31, 260)}`,
          });
        }
      } else {
        history.push({ role: 'user', content: userTurn(turn) });
      }
      lastSent = history.map((m) => ({ ...m }));
      const res = await client.chat.completions.create({
        model: 'stub-model',
        messages: history,
        tools: TOOLS,
      });
      statuses.push(res.choices[0]?.finish_reason ?? 'none');
      const msg = res.choices[0]!.message;
      history.push(
        msg.tool_calls && msg.tool_calls.length > 0
          ? { role: 'assistant', content: msg.content, tool_calls: msg.tool_calls }
          : { role: 'assistant', content: msg.content ?? '' },
      );
    }
  });

  afterAll(async () => {
    await stack.close();
  });

  it('answers every turn, forwarding each exactly once and within the stub window', () => {
    expect(statuses).toHaveLength(TURNS);
    expect(statuses.filter((s) => s === 'tool_calls').length).toBeGreaterThan(3);
    const sent = forwarded(stack.stub);
    expect(sent).toHaveLength(TURNS);
    expect(sent.every((r) => r.status === 200)).toBe(true);
    for (const r of stack.stub.requests.filter((q) => q.promptTokens !== undefined)) {
      expect(r.promptTokens).toBeLessThanOrEqual(stack.stub.window);
    }
  });

  it('makes one summariser call per stretch, the stretches read from what the stub received', async () => {
    const blocks = forwarded(stack.stub)
      .map(summaryBlock)
      .filter((b): b is string => b !== undefined);
    // Each stretch adds one span to the list the summary names; the lists seen tell how many stretches there were.
    const stretches = new Set(blocks.map((b) => JSON.stringify(spanRefsIn(b)))).size;
    expect(stretches).toBeGreaterThanOrEqual(2);
    const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
    expect(stats.summaries_chunked).toBe(0);
    expect(stats.summary_retries).toBe(0);
    expect(summaryCalls(stack.stub)).toHaveLength(stretches);
    const spans = await readSpans(join(stack.dataDir, 'spans'));
    expect(spans).toHaveLength(stretches);
  });

  it('carries the planted fact verbatim in the pinned block of every request after the first compaction', () => {
    const sent = forwarded(stack.stub);
    const first = sent.findIndex((r) => summaryBlock(r) !== undefined);
    expect(first).toBeGreaterThan(0);
    for (const r of sent.slice(first)) {
      const block = summaryBlock(r);
      expect(block).toBeDefined();
      expect(pinsIn(block!)).toContain(PIN);
    }
  });

  it('never splits a tool call from its results in any forwarded request', () => {
    for (const r of forwarded(stack.stub)) {
      const msgs = messagesOf(r);
      const seen = new Set<string>();
      const answered = new Set<string>();
      for (const m of msgs) {
        if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
          for (const c of m.tool_calls as Json[]) seen.add(String(c.id));
        }
        if (m.role === 'tool') {
          expect(seen.has(String(m.tool_call_id))).toBe(true);
          answered.add(String(m.tool_call_id));
        }
      }
      expect([...seen].filter((id) => !answered.has(id))).toEqual([]);
    }
  });

  it('archives every evicted message exactly once, in order, verbatim', async () => {
    const last = forwarded(stack.stub).at(-1)!;
    const tail = messagesOf(last).filter((m) => m.role !== 'system');
    const cut = lastSent.length - tail.length;
    expect(JSON.parse(JSON.stringify(lastSent.slice(cut)))).toEqual(tail);
    const spans = (await readSpans(join(stack.dataDir, 'spans'))).filter((s) => !s.oversized);
    const archived = spans.flatMap((s) => s.messages);
    expect(archived).toEqual(JSON.parse(JSON.stringify(lastSent.slice(1, cut))));
    spans.forEach((s, i) => {
      expect(s.message_count).toBe(s.messages.length);
      expect(s.continues).toBe(i === 0 ? null : spans[i - 1]!.ref);
    });
  });
});
