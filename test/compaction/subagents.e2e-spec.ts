import { startStack, type Stack } from '../support/stack';
import { eventually, filler, getJson, summaryCalls, type Json } from './support';

// Issue 28 item 1: Claude Code (2.1.332 builds them into every request of a sub-agent) sends `x-claude-code-agent-id`,
// and `x-claude-code-parent-agent-id` for a sub-agent another sub-agent started, beside the session's own
// `x-claude-code-session-id`. A sub-agent gets its own compaction state under the session, and is never a person of
// its own: the session's usage, its row in the stats and its hand-off stay the main conversation's.

const SESSION = 'cc-session-alice';

/** About 7,500 stub tokens of Anthropic turns: over the 6,963-token budget (8192 window, reserve 1024). */
function conversation(seed: number, question: string): Json[] {
  const out: Json[] = [];
  for (let t = 1; t <= 11; t++) {
    out.push({ role: 'user', content: `Notes ${seed}.${t}:\n${filler(seed * 100 + t, 330)}` });
    out.push({ role: 'assistant', content: `Reviewed ${t}.` });
  }
  out.push({ role: 'user', content: question });
  return out;
}

function tools(n: number): Json[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `tool_${i}`,
    description: `Tool ${i}.`,
    input_schema: { type: 'object', properties: { path: { type: 'string' } } },
  }));
}

async function ask(stack: Stack, messages: Json[], headers: Record<string, string>, nTools: number) {
  const res = await fetch(`${stack.guardian.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'local',
      'anthropic-version': '2023-06-01',
      'x-claude-code-session-id': SESSION,
      ...headers,
    },
    body: JSON.stringify({
      model: 'stub-model',
      max_tokens: 256,
      system: 'You review migration notes.',
      tools: tools(nTools),
      messages,
    }),
  });
  expect(res.status).toBe(200);
  await res.text();
}

interface Usage {
  used_after_compaction: number;
  last_compaction_at: string | null;
}

async function usage(stack: Stack): Promise<Usage> {
  const r = await getJson(`${stack.guardian.url}/guardian/usage?session=${SESSION}`);
  expect(r.status).toBe(200);
  return r.body as unknown as Usage;
}

async function subagentSideRequests(stack: Stack): Promise<number> {
  const text = await (await fetch(`${stack.guardian.url}/metrics`)).text();
  return Number(/^guardian_usage_side_requests_total\{kind="subagent"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

async function compactionEvents(stack: Stack): Promise<Json[]> {
  const body = (await getJson(`${stack.guardian.url}/guardian/events`)).body;
  const events = (Array.isArray(body) ? body : (body.events as Json[] | undefined)) ?? [];
  return (events as Json[]).filter((e) => e.kind === 'compaction');
}

describe("a Claude Code session's sub-agents", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: 8192 },
      env: { GUARDIAN_RESERVE_OUTPUT: '1024' },
    });
  });
  afterAll(() => stack.close());

  it('compact on their own state, and the session stays one person with its own usage and hand-off', async () => {
    const main = conversation(1, 'What next for the main thread?');
    await ask(stack, main, {}, 6);
    const afterMain = summaryCalls(stack.stub).length;
    expect(afterMain).toBeGreaterThan(0);
    const mainUsage = await eventually(async () => {
      const r = await getJson(`${stack.guardian.url}/guardian/usage?session=${SESSION}`);
      return r.status === 200 ? (r.body as unknown as Usage) : undefined;
    });
    expect(mainUsage.last_compaction_at).not.toBeNull();

    // A forked sub-agent carries its parent's history: the same evicted stretch. Its state is its own, so it
    // summarises it for itself rather than taking the main conversation's summary (or moving its cuts).
    await ask(stack, main, { 'x-claude-code-agent-id': 'agent-a1' }, 6);
    expect(summaryCalls(stack.stub).length).toBeGreaterThan(afterMain);
    const afterFork = summaryCalls(stack.stub).length;
    // A sub-agent it started, nested: its own history, its own state again.
    await ask(
      stack,
      conversation(2, 'Check the schema notes.'),
      { 'x-claude-code-agent-id': 'agent-b2', 'x-claude-code-parent-agent-id': 'agent-a1' },
      2,
    );
    expect(summaryCalls(stack.stub).length).toBeGreaterThan(afterFork);
    await eventually(async () => ((await subagentSideRequests(stack)) === 2 ? true : undefined));

    // Never a person of its own: the usage is the main conversation's, the stats list one session.
    expect(await usage(stack)).toEqual(mainUsage);
    const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
    expect((stats.sessions as Json[]).length).toBe(1);
    // The events say which compaction was a sub-agent's, under the one session, without its raw id.
    const events = await compactionEvents(stack);
    expect(events).toHaveLength(3);
    expect(new Set(events.map((e) => e.session)).size).toBe(1);
    const agents = events.map((e) => e.agent);
    expect(agents[0]).toBeNull();
    expect(agents.slice(1).every((a) => typeof a === 'string' && /^[0-9a-f]{8}$/.test(a))).toBe(true);
    expect(new Set(agents).size).toBe(3);
    expect(JSON.stringify(events)).not.toContain('agent-a1');
    // The hand-off is still the main conversation's, though a sub-agent compacted last.
    const kept = await getJson(`${stack.guardian.url}/guardian/sessions/${SESSION}/handoff`);
    expect(kept.status).toBe(200);
    expect(JSON.stringify(kept.body)).toContain('What next for the main thread?');
    expect(JSON.stringify(kept.body)).not.toContain('Check the schema notes.');

    // The main conversation goes on: its own summary is reused, and its usage and hand-off move with it.
    const before = summaryCalls(stack.stub).length;
    await ask(
      stack,
      [...main, { role: 'assistant', content: 'Noted.' }, { role: 'user', content: 'And then?' }],
      {},
      6,
    );
    expect(summaryCalls(stack.stub)).toHaveLength(before);
    const moved = await eventually(async () => {
      const u = await usage(stack);
      return u.last_compaction_at !== mainUsage.last_compaction_at ? u : undefined;
    });
    expect(moved.used_after_compaction).toBeGreaterThan(0);
    const handoff = await getJson(`${stack.guardian.url}/guardian/sessions/${SESSION}/handoff`);
    expect(handoff.status).toBe(200);
    expect(JSON.stringify(handoff.body)).toContain('And then?');
  });
});
