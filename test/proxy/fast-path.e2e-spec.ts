import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

import { chatAdapter } from '../../apps/guardian/src/formats/chat.adapter';
import { sessionOfConversation } from '../../apps/guardian/src/compaction/request/session';
import { readSessionHeader } from '../../apps/guardian/src/proxy/session-headers';
import { filler, forwarded, getJson, postChat, type Json } from '../compaction/support';
import { startStack, type Stack } from '../support/stack';

/**
 * The fast path (ADR 0013): a request whose byte size proves it fits the model's known window is forwarded without
 * being parsed. What a user sees must not change: the same bytes upstream, the same answer, the session's usage and
 * the metrics still kept, compaction once a conversation grows past the budget, overflow recovery and fail-open.
 */
const stats = async (s: Stack) => (await getJson(`${s.guardian.url}/guardian/stats`)).body;
const bySize = async (s: Stack) => (await stats(s)).passthrough_by_size as number;

function small(turn: number): Json {
  return {
    model: 'stub-model',
    messages: [
      { role: 'system', content: 'You review migration notes.' },
      { role: 'user', content: `Notes ${turn}: ${filler(turn, 60)}` },
    ],
    max_tokens: 64,
  };
}

/** Five answered requests: the model's calibration has its samples, so the fast path may take the next ones. */
async function calibrate(s: Stack, headers: Record<string, string> = {}): Promise<void> {
  for (let i = 0; i < 5; i++) expect((await postChat(s.baseURL, small(100 + i), headers)).status).toBe(200);
}

async function usage(s: Stack, key: string): Promise<Json> {
  const r = await getJson(`${s.guardian.url}/guardian/usage?session=${encodeURIComponent(key)}`);
  expect(r.status).toBe(200);
  return r.body;
}

describe('requests whose size proves they fit', () => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await startStack({
      stub: { window: 1_000_000 },
      env: { GUARDIAN_NUM_CTX: '32768', GUARDIAN_RESERVE_OUTPUT: '4096' },
    });
  });
  afterEach(async () => {
    await stack.close();
  });

  it('are forwarded byte for byte unparsed, and their usage and metrics are still kept', async () => {
    await calibrate(stack, { 'x-guardian-session': 'dev-a' });
    expect(await bySize(stack)).toBe(0);
    // Key order and spacing a re-serialisation would change: the upstream must see exactly these bytes.
    const raw = `{ "max_tokens": 64, "messages": [ {"content": ${JSON.stringify(filler(7, 80))}, "role": "user"} ], "model": "stub-model" }`;
    const res = await postChat(stack.baseURL, raw, { 'x-guardian-session': 'dev-a' });
    expect(res.status).toBe(200);
    expect(await bySize(stack)).toBe(1);
    const sent = forwarded(stack.stub).at(-1)!;
    expect(sent.body.toString('utf8')).toBe(raw);
    // The usage line shows this request, with the upstream's own count of it.
    const shown = await usage(stack, 'dev-a');
    expect(shown).toMatchObject({ window: 32768, model: 'stub-model', count_source: 'tokenize' });
    expect(shown.used_after_compaction).toBe(sent.promptTokens);
    const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    expect(metrics).toMatch(/guardian_requests_total\{route="chat",outcome="passthrough"\} 6\b/);
  });

  it('keep the session the full path derives when no header is sent, and warn about an ignored one', async () => {
    await calibrate(stack);
    const body = small(7);
    const conv = chatAdapter.parse(body, { countTools: true })!;
    const key = sessionOfConversation({ kind: 'absent' }, conv).key;
    const res = await postChat(stack.baseURL, body, { 'x-guardian-session': 'x'.repeat(300) });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-guardian-warning')).toMatch(/X-Guardian-Session ignored: over 256 bytes/);
    expect(await bySize(stack)).toBe(1);
    expect((await usage(stack, key)).used_after_compaction).toBe(forwarded(stack.stub).at(-1)!.promptTokens);
    const ignored = readSessionHeader(['x'.repeat(300)]);
    expect(ignored.kind).toBe('ignored');
    const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    expect(metrics).toMatch(/guardian_session_header_ignored_total\{reason="too_long"\} 1\b/);
  });

  it('give way to the full path as a conversation grows, which compacts it past the budget', async () => {
    await calibrate(stack);
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    const history: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You review migration notes.' },
    ];
    for (let turn = 1; turn <= 24; turn++) {
      history.push({ role: 'user', content: `Notes ${turn}:\n${filler(turn, 700)}` });
      const res = await client.chat.completions.create({ model: 'stub-model', messages: history });
      history.push({ role: 'assistant', content: res.choices[0]?.message.content ?? '' });
    }
    const s = await stats(stack);
    expect(s.passthrough_by_size).toBeGreaterThan(0);
    expect(s.compactions_performed).toBeGreaterThan(0);
    // Every forwarded request fitted the window guardian was told.
    for (const r of forwarded(stack.stub)) expect(r.promptTokens).toBeLessThanOrEqual(32768);
  });

  it('are recovered when the upstream refuses one as too long after all', async () => {
    await stack.close();
    // Guardian is told 200,000 tokens; the stub's real window is 4,096.
    stack = await startStack({
      stub: { window: 4096 },
      env: { GUARDIAN_NUM_CTX: '200000', GUARDIAN_RESERVE_OUTPUT: '1024' },
    });
    await calibrate(stack);
    const messages: Json[] = [{ role: 'system', content: 'You review migration notes.' }];
    for (let t = 1; t <= 8; t++) {
      messages.push({ role: 'user', content: `Notes for step ${t}:\n${filler(t, 330)}` });
      messages.push({ role: 'assistant', content: `Step ${t} reviewed.` });
    }
    messages.push({ role: 'user', content: 'What next?' });
    const res = await postChat(stack.baseURL, { model: 'stub-model', messages });
    expect(res.status).toBe(200);
    expect(await bySize(stack)).toBe(1);
    expect(
      forwarded(stack.stub)
        .slice(-2)
        .map((r) => r.status),
    ).toEqual([400, 200]);
    expect((await stats(stack)).overflow_recovered).toBe(1);
  });

  it('are never taken for a model not yet calibrated, a body that is not JSON, or one with an image', async () => {
    expect((await postChat(stack.baseURL, small(1))).status).toBe(200);
    expect(await bySize(stack)).toBe(0);
    const image = {
      model: 'stub-model',
      messages: [
        {
          role: 'user',
          content: [{ type: 'image_url', image_url: { url: 'https://example.invalid/a.png' } }],
        },
      ],
    };
    await calibrate(stack);
    const before = await bySize(stack);
    const broken = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model": "stub-model", "messages": [',
    });
    expect(broken.status).toBe(400);
    expect((await postChat(stack.baseURL, image)).status).toBe(200);
    expect(await bySize(stack)).toBe(before);
    expect((await postChat(stack.baseURL, small(2))).status).toBe(200);
    expect(await bySize(stack)).toBe(before + 1);
  });
});
