import { createServer, type IncomingMessage, type Server } from 'node:http';

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { samples, sumOf } from '../support/prom-text';
import { startStack, type Stack } from '../support/stack';

type Json = Record<string, any>;

const conversation = (): Json[] => [
  { type: 'message', role: 'user', content: 'Remember this: the tag is FACT-PROBE-4411. Plan the release.' },
  { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Planned.' }] },
  { type: 'message', role: 'user', content: 'Go on.' },
];

async function probes(stack: Stack, family: string, verdict: string): Promise<number> {
  const text = await (await fetch(`${stack.guardian.url}/metrics`)).text();
  return sumOf(samples(text), 'guardian_native_probes_total', { family, verdict });
}

/**
 * A stand-in for an upstream that serves the compaction protocols itself (OpenAI, or Ollama since 2026): it answers
 * `/v1/responses/compact` and Anthropic's on-demand compaction in kind, with its own opaque item, and records what it
 * received. Anything else is a plain answer.
 */
async function nativeUpstream(): Promise<{ url: string; received: Json[]; close(): Promise<void> }> {
  const received: Json[] = [];
  const read = async (req: IncomingMessage): Promise<Json> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? (JSON.parse(text) as Json) : {};
  };
  const server: Server = createServer((req, res) => {
    void read(req).then((body) => {
      const path = (req.url ?? '').split('?')[0];
      received.push({
        method: req.method,
        path,
        body,
        auth: req.headers.authorization ?? req.headers['x-api-key'],
      });
      const send = (status: number, out: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(out));
      if (req.method === 'POST' && path === '/v1/responses/compact')
        return send(200, {
          id: 'cmp_1',
          object: 'response.compaction',
          created_at: 1,
          output: [{ type: 'compaction', id: 'cmp_item', encrypted_content: 'UPSTREAM-OPAQUE' }],
          usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 },
        });
      if (req.method === 'POST' && path === '/v1/messages' && body.compaction)
        return send(200, {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [{ type: 'compaction', content: 'UPSTREAM SUMMARY', signature: 'upstream-sig' }],
          stop_reason: 'compaction',
          stop_sequence: null,
          usage: { input_tokens: 3, output_tokens: 2 },
        });
      return send(404, { error: { message: `no route for ${req.method} ${path}` } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('GUARDIAN_NATIVE_COMPACTION=auto probes the upstream once per protocol (issue 27 item 4)', () => {
  it('against the stub (a vLLM that serves neither): both probes answer no, and guardian serves the protocols', async () => {
    const stack = await startStack({
      stub: { flavor: 'vllm', window: 16384 },
      env: { GUARDIAN_NATIVE_COMPACTION: 'auto' },
    });
    try {
      const sdk = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-probe' });
      // A plain request asks nothing: only a request that speaks a protocol needs the answer.
      await sdk.responses.create({ model: 'stub-model', input: 'hello' });
      expect(stack.stub.requests.map((r) => r.path)).not.toContain('/v1/responses/compact');

      const first = await sdk.responses.compact({ model: 'stub-model', input: conversation() as any });
      const second = await sdk.responses.compact({ model: 'stub-model', input: conversation() as any });
      for (const c of [first, second]) expect((c.output.at(-1) as Json).encrypted_content).toMatch(/^cg2\./);
      const asked = stack.stub.requests.filter((r) => r.path === '/v1/responses/compact');
      expect(asked).toHaveLength(1);
      expect(asked[0]!.status).toBe(404);
      // The probe carried the client's credentials (a keyed upstream would refuse it without) and its model.
      expect(asked[0]!.headers.authorization).toBe('Bearer sk-probe');
      expect((asked[0]!.json as Json).model).toBe('stub-model');
      expect(await probes(stack, 'responses', 'absent')).toBe(1);

      const anthropic = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-probe' });
      const block = await anthropic.beta.messages.create({
        model: 'stub-model',
        max_tokens: 64,
        betas: ['compact-2026-09-04'],
        compaction: { type: 'summarize' },
        messages: [
          { role: 'user', content: 'Remember this: the tag is FACT-PROBE-4411.' },
          { role: 'assistant', content: 'Noted.' },
          { role: 'user', content: 'Compact please.' },
        ],
      } as any);
      expect((block.content[0] as Json).type).toBe('compaction');
      expect((block.content[0] as Json).signature).toMatch(/^cg2\./);
      // The strict stub refused the probe's `compaction` field, as it refuses every compaction field.
      const messagesProbe = stack.stub.requests.filter(
        (r) => r.route === 'messages' && (r.json as Json)?.compaction !== undefined,
      );
      expect(messagesProbe.map((r) => r.status)).toEqual([400]);
      expect(await probes(stack, 'messages', 'absent')).toBe(1);
    } finally {
      await stack.close();
    }
  });

  it('against an upstream that serves them: the probe proves it and the protocols go through untouched', async () => {
    const upstream = await nativeUpstream();
    const stack = await startStack({
      env: {
        GUARDIAN_UPSTREAM_URL: `${upstream.url}/v1`,
        GUARDIAN_NUM_CTX: '32768',
        GUARDIAN_NATIVE_COMPACTION: 'auto',
      },
    });
    try {
      const sdk = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-probe' });
      const compacted = await sdk.responses.compact({ model: 'gpt-x', input: conversation() as any });
      expect((compacted.output.at(-1) as Json).encrypted_content).toBe('UPSTREAM-OPAQUE');
      const compacts = upstream.received.filter((r) => r.path === '/v1/responses/compact');
      // The probe, then the client's own request, forwarded as sent.
      expect(compacts).toHaveLength(2);
      expect(compacts[1]!.body.input).toEqual(conversation());
      expect(await probes(stack, 'responses', 'serves')).toBe(1);

      const anthropic = new Anthropic({ baseURL: stack.guardian.url, apiKey: 'sk-probe' });
      const block = await anthropic.beta.messages.create({
        model: 'claude-x',
        max_tokens: 64,
        betas: ['compact-2026-09-04'],
        compaction: { type: 'summarize' },
        messages: [{ role: 'user', content: 'Compact please.' }],
      } as any);
      expect((block.content[0] as Json).signature).toBe('upstream-sig');
      expect(upstream.received.filter((r) => r.path === '/v1/messages')).toHaveLength(2);
      expect(await probes(stack, 'messages', 'serves')).toBe(1);
    } finally {
      await stack.close();
      await upstream.close();
    }
  });

  it('an explicit mode asks nothing: emulate serves the protocol without a probe', async () => {
    const upstream = await nativeUpstream();
    const stack = await startStack({
      env: {
        GUARDIAN_UPSTREAM_URL: `${upstream.url}/v1`,
        GUARDIAN_NUM_CTX: '32768',
        GUARDIAN_NATIVE_COMPACTION: 'emulate',
      },
    });
    try {
      const sdk = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-probe' });
      const compacted = await sdk.responses.compact({ model: 'gpt-x', input: conversation() as any });
      expect((compacted.output.at(-1) as Json).encrypted_content).toMatch(/^cg2\./);
      expect(upstream.received.filter((r) => r.path === '/v1/responses/compact')).toHaveLength(0);
      expect(await probes(stack, 'responses', 'serves')).toBe(0);
    } finally {
      await stack.close();
      await upstream.close();
    }
  });
});
