import OpenAI from 'openai';

import { startFaultStack, type FaultStack } from '../faults/support/fault-stack';
import { until } from '../support/wait';

// An upstream that dies after its status line is an upstream error, not a success (issue 12 defect 8): the
// client sees a broken answer, so the request counts as `upstream_error` and /guardian/stats reports the upstream
// down, on the routes guardian reads and on every other forwarded path alike.

describe('an upstream that breaks mid-answer', () => {
  let stack: FaultStack;
  beforeAll(async () => {
    stack = await startFaultStack({ stub: { window: 100_000 } });
  });
  afterAll(async () => {
    await stack.close();
  });

  it('is counted as an upstream error, and stats say the upstream is down', async () => {
    const client = new OpenAI({ baseURL: `${stack.guardian.url}/v1`, apiKey: 'k', maxRetries: 0 });
    await client.chat.completions.create({
      model: 'stub-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const before = await stack.metric('guardian_requests_total', {
      route: 'chat',
      outcome: 'upstream_error',
    });

    await stack.proxy.set('reset-mid-stream');
    const stream = await client.chat.completions.create({
      model: 'stub-model',
      stream: true,
      messages: [{ role: 'user', content: 'tell me a long story' }],
    });
    await expect(
      (async () => {
        for await (const chunk of stream) void chunk;
      })(),
    ).rejects.toThrow();
    await expect(
      client.chat.completions.create({ model: 'stub-model', messages: [{ role: 'user', content: 'again' }] }),
    ).rejects.toThrow();

    // The sidecar sees the break a moment after the client does.
    let after = before;
    await until(
      'both breaks counted',
      async () =>
        (after = await stack.metric('guardian_requests_total', {
          route: 'chat',
          outcome: 'upstream_error',
        })) >=
        before + 2,
    );
    expect(after - before).toBe(2);
    const stats = (await (await fetch(`${stack.guardian.url}/guardian/stats`)).json()) as {
      upstream_status: string;
    };
    expect(stats.upstream_status).toBe('down');
  });

  it('counts a break on a path guardian only forwards as an upstream error too', async () => {
    await stack.proxy.set('none');
    const before = await stack.metric('guardian_requests_total', {
      route: 'other',
      outcome: 'upstream_error',
    });
    await stack.proxy.set('reset-mid-stream');
    // GET /v1/models is not a route guardian reads: it is forwarded as it is, and its answer breaks.
    await expect(fetch(`${stack.guardian.url}/v1/models`).then((r) => r.text())).rejects.toThrow();
    let after = before;
    await until(
      'the break counted',
      async () =>
        (after = await stack.metric('guardian_requests_total', {
          route: 'other',
          outcome: 'upstream_error',
        })) !== before,
    );
    expect(after - before).toBe(1);
  });
});
