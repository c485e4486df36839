import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { startStack } from '../support/stack';

/** Pins, spill, memo and fail-open behave on /v1/messages as on chat (issue 5): the last two, shown here. */
const ENV = { GUARDIAN_NUM_CTX: '8192', GUARDIAN_RESERVE_OUTPUT: '1024' };

function notes(turn: number, words: number): string {
  const vocabulary = ['ledger', 'export', 'retry', 'queue', 'schema', 'tenant', 'invoice', 'cursor'];
  return Array.from({ length: words }, (_, i) => vocabulary[(i * 3 + turn) % vocabulary.length]).join(' ');
}

async function post(url: string, body: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${url}/v1/messages?beta=true`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'sk-ant-test',
      'anthropic-version': '2023-06-01',
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

describe('/v1/messages: fail-open and big-paste spill', () => {
  it('forwards the client bytes unchanged when the summariser fails, and counts it', async () => {
    // Over the budget (8,192) but inside the window (16,384): the upstream may well take it, so it goes as sent.
    // (A request over the window itself gets a checkpoint instead: issue 20, ADR 0007.)
    const stack = await startStack({
      stub: { flavor: 'anthropic', window: 32768 },
      env: { GUARDIAN_NUM_CTX: '16384', GUARDIAN_RESERVE_OUTPUT: '8192' },
    });
    try {
      const messages: unknown[] = [];
      for (let t = 1; t <= 12; t++) {
        messages.push({ role: 'user', content: `Notes ${t}: ${notes(t, 400)}` });
        messages.push({ role: 'assistant', content: [{ type: 'text', text: `Read ${t}.` }] });
      }
      messages.push({ role: 'user', content: 'Summarise the risks.' });
      const body = {
        model: 'stub-model',
        max_tokens: 256,
        system: [{ type: 'text', text: 'Be brief.' }],
        messages,
      };
      stack.stub.failNext(500, { type: 'error', error: { type: 'api_error', message: 'summariser down' } });
      const res = await post(stack.guardian.url, body);
      expect(res.status).toBe(200);
      const summaries = stack.stub.requests.filter((r) => r.isSummary);
      expect(summaries.map((r) => r.status)).toEqual([500]);
      const forwarded = stack.stub.requests.filter((r) => r.route === 'messages' && !r.isSummary);
      expect(forwarded.at(-1)!.body.toString('utf8')).toBe(JSON.stringify(body));
      const stats = (await (await fetch(`${stack.guardian.url}/guardian/stats`)).json()) as {
        fail_open: Record<string, number>;
      };
      expect(stats.fail_open.summarise).toBe(1);
    } finally {
      await stack.close();
    }
  });

  it('archives a pasted message bigger than the window whole and forwards its head, pointer and tail', async () => {
    const stack = await startStack({ stub: { flavor: 'anthropic', window: 8192 }, env: ENV });
    try {
      const paste = Array.from({ length: 900 }, (_, i) => `line ${i}: ${notes(i, 8)}`).join('\n');
      const body = {
        model: 'stub-model',
        max_tokens: 256,
        system: 'Review the log.',
        messages: [{ role: 'user', content: `Here is the build log:\n${paste}\nWhat failed?` }],
      };
      expect(stack.stub.countPrompt(body, 'messages')).toBeGreaterThan(8192);
      const res = await post(stack.guardian.url, body);
      expect(res.status).toBe(200);
      const sent = JSON.parse(
        stack.stub.requests
          .filter((r) => r.route === 'messages')
          .at(-1)!
          .body.toString('utf8'),
      ) as {
        messages: { content: string | { text: string }[] }[];
      };
      const content = sent.messages[0]!.content;
      const text = typeof content === 'string' ? content : content.map((b) => b.text).join('');
      expect(text.startsWith('Here is the build log:\nline 0:')).toBe(true);
      expect(text.endsWith('What failed?')).toBe(true);
      expect(text).toMatch(
        /\[context-guardian: message 1 \(\d+ tokens\) archived as [A-Za-z0-9_-]+\/0001\.json -- the middle \d+ tokens are omitted; with the recall MCP server, search_spans\/read_span open the full text\]/,
      );
      // The whole message is in the span, verbatim.
      const spans = join(stack.dataDir, 'spans');
      const [run] = (await readdir(spans)).filter((r) => !r.startsWith('.')); // .tlog is the log, not a run
      const span = JSON.parse(await readFile(join(spans, run!, '0001.json'), 'utf8')) as {
        kind: string;
        oversized: boolean;
        messages: unknown[];
      };
      expect(span).toMatchObject({ kind: 'oversized', oversized: true });
      expect(span.messages).toEqual([body.messages[0]]);
    } finally {
      await stack.close();
    }
  });
});
