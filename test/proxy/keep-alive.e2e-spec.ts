import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { filler, forwarded, summaryCalls, type Json } from '../compaction/support';
import { startStack, type Stack } from '../support/stack';
import { until } from '../support/wait';

// Issue 28 item 2: a streamed request that waited on a 15 s summary sent its first byte after 15.1 s, and a client
// gives up on a silent stream (Claude Code after 300 s). Now guardian's own wait sends keep-alive frames: Anthropic
// `event: ping`, an SSE comment on the OpenAI routes. The summary is held by the stub until the client has received a
// frame, so no clock decides the verdict: without keep-alive the test would wait for a frame that never comes.

const PING = 'event: ping\ndata: {"type": "ping"}\n\n';
const COMMENT = ': keep-alive\n\n';

/** The bytes a client's SDK received, recorded by the fetch it was given. */
class Wire {
  text = '';
  status = 0;
  readonly fetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    this.status = res.status;
    if (!res.body) return res;
    const decoder = new TextDecoder();
    const body = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform: (chunk, c) => {
          this.text += decoder.decode(chunk, { stream: true });
          c.enqueue(chunk);
        },
      }),
    );
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/** Over the 6,963-token budget (8192 window, reserve 1024) but under the stub's window: one summary compacts it. */
function turns(seed: number): { role: 'user' | 'assistant'; content: string }[] {
  const out: { role: 'user' | 'assistant'; content: string }[] = [];
  for (let t = 1; t <= 11; t++) {
    out.push({ role: 'user', content: `Notes ${seed}.${t}:\n${filler(seed * 100 + t, 330)}` });
    out.push({ role: 'assistant', content: `Reviewed ${t}.` });
  }
  out.push({ role: 'user', content: 'What next?' });
  return out;
}

type Route = 'chat' | 'messages' | 'responses';

/** Streams one over-budget request through the route's official SDK; resolves with the text, or the error thrown. */
async function run(
  stack: Stack,
  route: Route,
  seed: number,
  wire: Wire,
): Promise<{ text: string } | { error: unknown }> {
  try {
    if (route === 'messages') {
      const client = new Anthropic({
        baseURL: stack.guardian.url,
        apiKey: 'local',
        fetch: wire.fetch,
        maxRetries: 0,
      });
      const stream = await client.messages.create({
        model: 'stub-model',
        max_tokens: 64,
        stream: true,
        system: 'You review migration notes.',
        messages: turns(seed),
      });
      let text = '';
      for await (const e of stream)
        if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
      return { text };
    }
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'local', fetch: wire.fetch, maxRetries: 0 });
    if (route === 'chat') {
      const stream = await client.chat.completions.create({
        model: 'stub-model',
        stream: true,
        messages: [{ role: 'system', content: 'You review migration notes.' }, ...turns(seed)],
      });
      let text = '';
      for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
      return { text };
    }
    const stream = await client.responses.create({
      model: 'stub-model',
      stream: true,
      instructions: 'You review migration notes.',
      input: turns(seed),
    });
    let text = '';
    for await (const e of stream) if (e.type === 'response.output_text.delta') text += e.delta;
    return { text };
  } catch (error) {
    return { error };
  }
}

const cases: [Route, string, number][] = [
  ['messages', PING, 1],
  ['chat', COMMENT, 2],
  ['responses', COMMENT, 3],
];

describe('keep-alive while guardian waits on a summary (issue 28 item 2)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: 8192 },
      env: { GUARDIAN_RESERVE_OUTPUT: '1024', GUARDIAN_KEEPALIVE_MS: '20' },
    });
  });
  afterAll(() => stack.close());
  afterEach(() => stack.stub.reset());

  it.each(cases)(
    '%s: frames reach the SDK while the summary is held, then the answer streams whole',
    async (route, frame, seed) => {
      const hold = stack.stub.holdNextSummary();
      const wire = new Wire();
      const done = run(stack, route, seed, wire);
      await hold.received;
      await until('a keep-alive frame at the client', () => wire.text.includes(frame));
      expect(wire.status).toBe(200);
      hold.release();
      const out = await done;
      expect(out).toHaveProperty('text');
      expect((out as { text: string }).text.length).toBeGreaterThan(0);
      // The frames came first: nothing of the upstream's answer was sent before them.
      expect(wire.text.startsWith(frame)).toBe(true);
      // What went upstream is the compacted request, once: keep-alive is the client's only.
      expect(summaryCalls(stack.stub)).toHaveLength(1);
      const sent = forwarded(stack.stub);
      expect(sent).toHaveLength(1);
      expect(sent[0]!.body.toString('utf8')).not.toContain('keep-alive');
      expect(sent[0]!.body.length).toBeLessThan(Buffer.byteLength(JSON.stringify(turns(seed))));
    },
  );

  it('sends nothing early to a request that is not streamed', async () => {
    const hold = stack.stub.holdNextSummary();
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'local', maxRetries: 0 });
    const done = client.chat.completions
      .create({ model: 'stub-model', messages: [{ role: 'system', content: 'x' }, ...turns(30)] })
      .withResponse();
    await hold.received;
    // Ten periods held: a frame, were one sent, would have committed a 200 SSE head (this wait can only let a wrong
    // build pass on a very busy machine, never fail a right one).
    await new Promise((r) => setTimeout(r, 200));
    hold.release();
    const { data, response } = await done;
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(response.headers.get('x-guardian-keep-alive')).toBeNull();
    expect(data.choices[0]?.message.content?.length).toBeGreaterThan(0);
  });
});

// Three failing summaries open the summariser's breaker for the model (summary-breaker.ts): a stack of their own.
describe('keep-alive, then a failure after the status line (issue 28 item 2)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: 8192 },
      env: { GUARDIAN_RESERVE_OUTPUT: '1024', GUARDIAN_KEEPALIVE_MS: '20' },
    });
  });
  afterAll(() => stack.close());
  afterEach(() => stack.stub.reset());

  it.each(cases)(
    '%s: a failing summariser, then a failing upstream, ends in the route error event',
    async (route, frame, seed) => {
      const hold = stack.stub.holdNextSummary();
      stack.stub.failNext(500, { error: { message: 'summariser down', type: 'server_error' } });
      const body: Json =
        route === 'messages'
          ? { type: 'error', error: { type: 'overloaded_error', message: 'backend overloaded' } }
          : { error: { message: 'backend overloaded', type: 'server_error', code: 'overloaded' } };
      stack.stub.failNext(503, body);
      const wire = new Wire();
      const done = run(stack, route, seed + 10, wire);
      await hold.received;
      await until('a keep-alive frame at the client', () => wire.text.includes(frame));
      hold.release();
      const out = await done;
      // The SDK threw the upstream's own error, read from the route's SSE error event (the status line was 200).
      expect(out).toHaveProperty('error');
      const error = (out as { error: unknown }).error;
      expect(error).toBeInstanceOf(route === 'messages' ? Anthropic.APIError : OpenAI.APIError);
      expect(String((error as Error).message)).toContain('backend overloaded');
      const named = route !== 'chat';
      expect(wire.text).toContain(`${named ? 'event: error\n' : ''}data: ${JSON.stringify(body)}\n\n`);
      // The client's own bytes went upstream (fail open), once.
      expect(forwarded(stack.stub)).toHaveLength(1);
    },
  );
});

// The failures above are the upstream's own error bodies, relayed. An error guardian raises itself once the status
// line is out (here: the upstream went away while the summary was held, so neither the summary nor the request can
// be sent) must reach the SDK the same way, as the route's SSE error event, never as a cut connection. The upstream
// is stopped, so each route gets a stack of its own.
describe("keep-alive, then guardian's own error after the status line (issue 28 item 2)", () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it.each(cases)('%s: the upstream gone ends in the route error event', async (route, frame, seed) => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: 8192 },
      env: { GUARDIAN_RESERVE_OUTPUT: '1024', GUARDIAN_KEEPALIVE_MS: '20' },
    });
    const hold = stack.stub.holdNextSummary();
    const wire = new Wire();
    const done = run(stack, route, seed + 20, wire);
    await hold.received;
    await until('a keep-alive frame at the client', () => wire.text.includes(frame));
    await stack.stub.close();
    const out = await done;
    expect(wire.status).toBe(200);
    expect(wire.text.startsWith(frame)).toBe(true);
    expect(out).toHaveProperty('error');
    const error = (out as { error: unknown }).error;
    expect(error).toBeInstanceOf(route === 'messages' ? Anthropic.APIError : OpenAI.APIError);
    expect(String((error as Error).message)).toContain('the upstream could not be reached');
    // The route's own error event, in the route's own shape, with guardian's code.
    const data = wire.text.split('\n\n').find((f) => f.includes('UPSTREAM_UNREACHABLE'));
    expect(data).toBeDefined();
    const named = route !== 'chat';
    expect(data!.startsWith(named ? 'event: error\ndata: ' : 'data: ')).toBe(true);
    const body = JSON.parse(data!.slice(data!.indexOf('data: ') + 6)) as Json;
    expect(body).toMatchObject(
      route === 'messages'
        ? { type: 'error', error: { type: 'api_error', code: 'UPSTREAM_UNREACHABLE' } }
        : { error: { type: 'server_error', code: 'UPSTREAM_UNREACHABLE' } },
    );
    // Nothing after the error event: the stream ended there.
    expect(wire.text.endsWith(`${data!}\n\n`)).toBe(true);
  });
});

// Issue 30 item 12: when the newest message must be cut, the client is told in `X-Guardian-Newest-Cut`; but a streamed
// request that waited on a summary had its head sent early by keep-alive, and the header was lost (14 cuts evented, 0
// headers). The same words now come as an SSE comment line before the answer, which every SDK skips. The summary is
// held until a keep-alive frame has reached the client, so the head is out before the cut is known, on every run.
describe('keep-alive, then a newest message that had to be cut (issue 30 item 12)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: 8192 },
      env: { GUARDIAN_RESERVE_OUTPUT: '1024', GUARDIAN_KEEPALIVE_MS: '20' },
    });
  });
  afterAll(() => stack.close());
  afterEach(() => stack.stub.reset());

  /** The usual history, then a newest message that alone does not fit beside it: a summary, then the cut. */
  const withPaste = (seed: number): { role: 'user' | 'assistant'; content: string }[] => {
    const history = turns(seed).slice(0, -1);
    return [...history, { role: 'user', content: `Review this log.\n${filler(seed * 1000, 6000)}` }];
  };

  it.each(cases)(
    '%s: the cut comes as an SSE comment before the answer, and the SDK reads the answer whole',
    async (route, frame, seed) => {
      const hold = stack.stub.holdNextSummary();
      const wire = new Wire();
      const messages = withPaste(seed + 20);
      const done = (async () => {
        try {
          if (route === 'messages') {
            const client = new Anthropic({
              baseURL: stack.guardian.url,
              apiKey: 'local',
              fetch: wire.fetch,
              maxRetries: 0,
            });
            const stream = await client.messages.create({
              model: 'stub-model',
              max_tokens: 64,
              stream: true,
              messages,
            });
            let text = '';
            for await (const e of stream)
              if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
            return { text };
          }
          const client = new OpenAI({
            baseURL: stack.baseURL,
            apiKey: 'local',
            fetch: wire.fetch,
            maxRetries: 0,
          });
          if (route === 'chat') {
            const stream = await client.chat.completions.create({
              model: 'stub-model',
              stream: true,
              messages,
            });
            let text = '';
            for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
            return { text };
          }
          const stream = await client.responses.create({
            model: 'stub-model',
            stream: true,
            input: messages,
          });
          let text = '';
          for await (const e of stream) if (e.type === 'response.output_text.delta') text += e.delta;
          return { text };
        } catch (error) {
          return { error };
        }
      })();
      await hold.received;
      await until('a keep-alive frame at the client', () => wire.text.includes(frame));
      hold.release();
      const out = await done;
      expect(out).toHaveProperty('text');
      expect((out as { text: string }).text.length).toBeGreaterThan(0);
      // Frames, then the comment with what the header would have said, then the answer's first event.
      const comment =
        /^: x-guardian-newest-cut: (omitted_tokens=[1-9]\d*; original_tokens=[1-9]\d*; span=\S+)\n\n/m.exec(
          wire.text,
        );
      expect(comment).not.toBeNull();
      const before = wire.text.slice(0, comment!.index);
      expect(before.split(frame).every((x) => x === '')).toBe(true);
      // The newest message was cut, as the event says too.
      const events = (await (await fetch(`${stack.guardian.url}/guardian/events`)).json()) as {
        events: { kind: string }[];
      };
      expect(events.events.filter((e) => e.kind === 'newest_cut').length).toBeGreaterThan(0);
      const sent = forwarded(stack.stub);
      expect(sent).toHaveLength(1);
      expect(sent[0]!.body.toString('utf8')).not.toContain(filler((seed + 20) * 1000, 6000));
    },
  );
});
