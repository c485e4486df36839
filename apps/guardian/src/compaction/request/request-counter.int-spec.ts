import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { UpstreamClient } from '@guardian/upstream';

import { GuardianConfig } from '../../config/guardian-config';
import { chatAdapter } from '../../formats/chat.adapter';
import { EXACT_FAILURES, EXACT_REST_MS, RequestCounter } from './request-counter';

// Issue 30 item 8: three exact-count failures in a row stopped exact counting for the life of the process, so a
// tokenizer that stalled for a few seconds left every later request on the estimate. Exact counting now rests and
// asks again (the rest itself: request-counter.spec.ts). Date.now is stubbed: nothing waits on a clock.

describe('RequestCounter: exact counting after a tokenizer that failed', () => {
  let server: Server;
  let upstream: UpstreamClient;
  /** Whether /tokenize answers (vLLM's shape); otherwise it answers 503. */
  let tokenizerUp = false;
  let asked = 0;
  let now = 1_000_000;

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url !== '/tokenize') return void res.writeHead(404).end();
        asked += 1;
        if (!tokenizerUp) return void res.writeHead(503).end('{"error":"busy"}');
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end('{"count": 1000, "max_model_len": 8192}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    upstream = new UpstreamClient({
      origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      timeoutSeconds: 60,
      connectTimeoutSeconds: 60,
    });
    jest.spyOn(Date, 'now').mockImplementation(() => now);
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await upstream.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('rests after three failures, asks again after the rest, and counts exactly once the tokenizer answers', async () => {
    const config = GuardianConfig.fromEnv({}, { version: 't', home: '/nonexistent' });
    const counter = new RequestCounter(config, upstream);
    const conv = chatAdapter.parse(
      { model: 'm', messages: [{ role: 'user', content: 'word '.repeat(800) }] },
      { countTools: true },
    );
    if (!conv) throw new Error('the chat adapter did not read the conversation');
    // A budget at the estimate: every count is near it, so each one asks for the exact count while it may.
    const budget = counter.estimate(conv).tokens;
    const count = () => counter.count(conv, budget, {});

    for (let i = 0; i < EXACT_FAILURES; i++) expect((await count()).source).toBe('estimate');
    expect(asked).toBe(EXACT_FAILURES);
    // Resting: the estimate stands without asking.
    await count();
    expect(asked).toBe(EXACT_FAILURES);
    // The tokenizer is back; after the rest the next count asks, and is exact.
    tokenizerUp = true;
    now += EXACT_REST_MS[0];
    expect(await count()).toMatchObject({ source: 'tokenize', tokens: 1000 });
    expect(asked).toBe(EXACT_FAILURES + 1);
    // And stays exact, asking each time.
    expect(await count()).toMatchObject({ source: 'tokenize', tokens: 1000 });
    expect(asked).toBe(EXACT_FAILURES + 2);
  });
});
