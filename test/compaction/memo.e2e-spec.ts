import { startStack, type Stack } from '../support/stack';
import { filler, forwarded, postChat, summaryBlock, summaryCalls, type Json } from './support';

/** About 7,500 stub tokens: over the 6,963-token budget (8192 window, reserve 1024), under the window. */
function conversation(seed: number): Json[] {
  const out: Json[] = [{ role: 'system', content: 'You review migration notes.' }];
  for (let t = 1; t <= 11; t++) {
    out.push({ role: 'user', content: `Notes ${seed}.${t}:\n${filler(seed * 100 + t, 330)}` });
    out.push({ role: 'assistant', content: `Reviewed ${t}.` });
  }
  out.push({ role: 'user', content: 'What next?' });
  return out;
}

const ENV = { GUARDIAN_RESERVE_OUTPUT: '1024' };

describe('the summary memo', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('makes no second summariser call for the same request sent twice', async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: 8192 }, env: ENV });
    const body = { model: 'stub-model', messages: conversation(1) };
    expect((await postChat(stack.baseURL, body)).status).toBe(200);
    const afterFirst = summaryCalls(stack.stub).length;
    expect(afterFirst).toBeGreaterThan(0);
    expect((await postChat(stack.baseURL, body)).status).toBe(200);
    expect(summaryCalls(stack.stub)).toHaveLength(afterFirst);
    const [a, b] = forwarded(stack.stub);
    // The retried request is forwarded exactly as the first one was.
    expect(b!.body.equals(a!.body)).toBe(true);
  });

  it('makes exactly one summariser call for two concurrent identical over-budget requests', async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: 8192, latencyMs: 30 }, env: ENV });
    const body = { model: 'stub-model', messages: conversation(2) };
    const [x, y] = await Promise.all([postChat(stack.baseURL, body), postChat(stack.baseURL, body)]);
    expect([x.status, y.status]).toEqual([200, 200]);
    expect(summaryCalls(stack.stub)).toHaveLength(1);
    const sent = forwarded(stack.stub);
    expect(sent).toHaveLength(2);
    expect(sent.every((r) => summaryBlock(r) !== undefined)).toBe(true);
  });

  it('with GUARDIAN_SUMMARY_MEMO=0 calls the summariser on every compacted turn', async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: 8192 },
      env: { ...ENV, GUARDIAN_SUMMARY_MEMO: '0' },
    });
    const messages = conversation(3);
    for (let turn = 1; turn <= 3; turn++) {
      const res = await postChat(stack.baseURL, { model: 'stub-model', messages });
      expect(res.status).toBe(200);
      messages.push(
        { role: 'assistant', content: `Answer ${turn}.` },
        { role: 'user', content: `Follow-up ${turn}?` },
      );
    }
    const compacted = forwarded(stack.stub).filter((r) => summaryBlock(r) !== undefined).length;
    expect(compacted).toBe(3);
    expect(summaryCalls(stack.stub)).toHaveLength(compacted);
  });
});
