import Anthropic from '@anthropic-ai/sdk';

import type { RecordedRequest } from '@guardian/stub-backend';

import { startStack, type Stack } from '../support/stack';
import { checkAnthropic, type Json } from './support/checks';
import { prose, sourceFile } from './support/session-text';

const WINDOW = 6000;
const FACT = 'Remember this: the deploy key is FACT-ANTH-4242.';
const BETAS = 'interleaved-thinking-2025-05-14,context-management-2025-06-27';
const TURNS = 10;

type Msg = Json & { role: string; content: unknown };

/** Turn N's user message as Claude Code sends it: blocks, the newest one marked for prompt caching. */
function userTurn(turn: number): Msg {
  const head = turn === 1 ? `${FACT}\nLet us refactor the parser.` : `Step ${turn} of the refactor.`;
  return {
    role: 'user',
    content: [
      { type: 'text', text: `${head}\n${prose(turn, 260)}` },
      { type: 'text', text: 'What next?', cache_control: { type: 'ephemeral' } },
    ],
  };
}

let calls = 0;

/** The stub's tool-using assistant: a Read call for a typed turn, a short answer after a tool result. */
function reply(req: RecordedRequest) {
  const body = req.json as { messages: Msg[] };
  const last = body.messages.at(-1);
  const hasResult = Array.isArray(last?.content) && JSON.stringify(last.content).includes('"tool_result"');
  if (hasResult) return { text: `Read it; step done with ${body.messages.length} messages in view.` };
  calls += 1;
  return {
    toolCalls: [
      { id: `toolu_${calls}`, name: 'Read', arguments: JSON.stringify({ path: `src/f${calls}.ts` }) },
    ],
  };
}

function client(stack: Stack): Anthropic {
  // Both auth styles at once, as Claude Code behind a gateway sends them (x-api-key and Authorization: Bearer).
  return new Anthropic({
    baseURL: stack.guardian.url,
    // The SDK takes one credential option and drops x-api-key when it sees Authorization; both as default headers
    // go out as given.
    apiKey: null,
    authToken: null,
    defaultHeaders: { 'x-api-key': 'sk-ant-both', authorization: 'Bearer tok-both', 'anthropic-beta': BETAS },
  });
}

const generations = (stack: Stack, summary: boolean) =>
  stack.stub.requests.filter((r) => r.route === 'messages' && r.isSummary === summary);

describe('Anthropic /v1/messages: a long tool-using session through the official SDK', () => {
  let stack: Stack;
  const sent: Json[] = [];

  beforeAll(async () => {
    stack = await startStack({
      stub: { flavor: 'anthropic', window: WINDOW, reply },
      // The summary path is what this session checks; clearing old tool results first (issue 32 item 3) is
      // tested in test/compaction/tool-results-cleared.e2e-spec.ts.
      env: {
        GUARDIAN_NUM_CTX: String(WINDOW),
        GUARDIAN_RESERVE_OUTPUT: '1000',
        GUARDIAN_CLEAR_TOOL_RESULTS: '0',
      },
    });
    const sdk = client(stack);
    const messages: Msg[] = [];
    for (let turn = 1; turn <= TURNS; turn++) {
      // Claude Code's mid-conversation system item: kept wherever it sits.
      if (turn === 3) messages.push({ role: 'system', content: 'The user switched to plan mode.' });
      messages.push(userTurn(turn));
      for (;;) {
        const body: Json = {
          model: 'stub-model',
          max_tokens: 1000,
          system: [
            { type: 'text', text: 'You are a careful coding agent.', cache_control: { type: 'ephemeral' } },
          ],
          thinking: { type: 'enabled', budget_tokens: 800 },
          messages: messages.map((m) => ({ ...m })),
        };
        sent.push(body);
        const answer = await sdk.messages.create(body as never, { query: { beta: 'true' } });
        // The history the client resends keeps a thinking block first in each assistant turn, as real clients do.
        const content = [
          {
            type: 'thinking',
            thinking: `Turn ${turn}: decide the next step.`,
            signature: `sig-${sent.length}`,
          },
          ...answer.content,
        ];
        messages.push({ role: 'assistant', content });
        const call = answer.content.find((b) => b.type === 'tool_use');
        if (!call || call.type !== 'tool_use') break;
        messages.push({
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: call.id,
              content: sourceFile(sent.length, 12),
              is_error: turn === 4,
            },
          ],
        });
      }
    }
  });
  afterAll(async () => {
    await stack.close();
  });

  it('answers every turn, and the history outgrows the window, so compaction was needed', () => {
    const forwarded = generations(stack, false);
    expect(forwarded).toHaveLength(sent.length);
    expect(forwarded.every((r) => r.status === 200)).toBe(true);
    expect(stack.stub.countPrompt(sent.at(-1), 'messages')).toBeGreaterThan(WINDOW);
  });

  it('forwards valid requests: tail from a typed user turn, pairs whole, system items kept, blocks untouched', () => {
    const forwarded = generations(stack, false);
    let compactions = 0;
    forwarded.forEach((rec, i) => {
      const verdict = checkAnthropic(sent[i]!, rec.json as Json);
      expect({ request: i, problems: verdict.problems }).toEqual({ request: i, problems: [] });
      if (!verdict.compacted) return;
      compactions += 1;
      const json = rec.json as { messages: Msg[]; system: { text: string }[] };
      // The mid-conversation system item is still there, once: eviction left it at the front of `messages`, where
      // Anthropic wants a user turn, so it joined `system` just before the summary block.
      expect(json.messages.filter((m) => m.role === 'system')).toEqual([]);
      expect(json.messages[0]!.role).toBe('user');
      const texts = json.system.map((b) => b.text);
      expect(texts.filter((t) => t === 'The user switched to plan mode.')).toHaveLength(1);
      expect(texts.at(-2)).toBe('The user switched to plan mode.');
      expect(stack.stub.countPrompt(rec.json, 'messages')).toBeLessThanOrEqual(WINDOW);
    });
    expect(compactions).toBeGreaterThan(0);
  });

  it('carries the planted fact verbatim in every compacted request', () => {
    const summaries = generations(stack, false)
      .map((rec, i) => checkAnthropic(sent[i]!, rec.json as Json).summary)
      .filter((s): s is string => s !== undefined);
    expect(summaries.length).toBeGreaterThan(0);
    for (const s of summaries) expect(s).toContain(FACT);
  });

  it('keeps ?beta=true and the headers on forwarded calls; the summariser call gets both credentials', () => {
    for (const rec of generations(stack, false)) {
      expect(rec.path).toBe('/v1/messages?beta=true');
      expect(rec.headers['anthropic-beta']).toBe(BETAS);
    }
    const summaries = generations(stack, true);
    expect(summaries.length).toBeGreaterThan(0);
    for (const rec of summaries) {
      expect(rec.path.split('?')[0]).toBe('/v1/messages');
      expect(rec.headers).toMatchObject({
        'x-api-key': 'sk-ant-both',
        authorization: 'Bearer tok-both',
        'anthropic-beta': BETAS,
      });
      expect(rec.headers['anthropic-version']).toEqual(expect.any(String));
      expect(rec.status).toBe(200);
    }
  });

  it('streams the same SSE event sequence as the upstream sends directly, for a compacted request', async () => {
    const body = { ...sent.at(-1)!, stream: true };
    const events = async (sdk: Anthropic, b: Json) => {
      const stream = await sdk.messages.create(b as never, { query: { beta: 'true' } });
      const types: string[] = [];
      for await (const e of stream as unknown as AsyncIterable<{ type: string }>) types.push(e.type);
      return types;
    };
    const viaGuardian = await events(client(stack), body);
    const forwarded = stack.stub.requests.filter((r) => r.route === 'messages' && !r.isSummary).at(-1)!;
    expect(checkAnthropic(body, forwarded.json as Json)).toMatchObject({ compacted: true, problems: [] });
    const direct = new Anthropic({ baseURL: stack.stub.url, apiKey: 'sk-ant-both' });
    const fromStub = await events(direct, forwarded.json as Json);
    expect(viaGuardian).toEqual(fromStub);
    expect(viaGuardian[0]).toBe('message_start');
    expect(viaGuardian.at(-1)).toBe('message_stop');
  });
});
