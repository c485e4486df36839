import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { filler } from '../compaction/support';
import { until as untilHolds } from '../support/wait';
import { startSidecarProcess, type SidecarProcess } from './support/sidecar-process';
import { mountTmpfs, type Tmpfs } from './support/tmpfs';
import { PATHS, type Route } from './support/traffic';

// SIGTERM during a rollout (issue 30 item 1): with two long SSE streams open, a new request 1 s later was refused
// (connection refused, /readyz too) and both streams were cut at the 25 s grace with no [DONE] and no error event.
// The built sidecar now drains: it serves on while /readyz says 503, then closes its listener, lets the streams in
// flight finish, and ends those still open at the grace with the route's SSE error event.
//
// Every phase is waited for by what a client sees (a 503 from /readyz, a refused connection), never by a clock: the
// drain and the grace are set wide by the environment, so a busy machine only makes the test slower.
const DRAIN_SECONDS = 10;
const GRACE_SECONDS = 25;

const CHAT = { model: 'stub-model', stream: true, messages: [{ role: 'user', content: 'hi' }] };
const MESSAGES = { ...CHAT, max_tokens: 64 };

/** A streamed answer being read to its end: its text so far, and whether it ended cleanly or was cut. */
interface Reading {
  done: Promise<{ text: string; cut: boolean }>;
}

async function stream(url: string, path: string, body: unknown): Promise<Reading> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  const done = (async () => {
    const decoder = new TextDecoder();
    let text = '';
    try {
      for await (const chunk of res.body!) text += decoder.decode(chunk as Uint8Array, { stream: true });
      return { text, cut: false };
    } catch {
      // The connection was cut mid-answer: what the test asserts never happens; the text so far is kept.
      return { text, cut: true };
    }
  })();
  return { done };
}

async function readyz(url: string): Promise<{ http: number; status: unknown } | 'refused'> {
  try {
    const res = await fetch(`${url}/readyz`);
    return { http: res.status, status: ((await res.json()) as { status?: unknown }).status };
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code;
    if (code === 'ECONNREFUSED') return 'refused';
    throw err;
  }
}

/** Polls until `check` holds; no limit of its own (jest's test timeout is the only one). */
async function until<T>(probe: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await probe();
    if (check(v)) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Everything a raw socket receives until the server closes it. */
function collect(socket: Socket): Promise<string> {
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString('utf8')));
  return new Promise((resolve, reject) => {
    socket.once('close', () => resolve(text));
    socket.once('error', reject);
  });
}

function rawRequest(method: string, path: string, port: string, body?: unknown): string {
  const payload = body === undefined ? '' : JSON.stringify(body);
  const framing =
    body === undefined
      ? ''
      : `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n`;
  return `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n${framing}\r\n${payload}`;
}

describe('SIGTERM with long SSE streams open (a rollout)', () => {
  let stub: StubBackend;
  let volume: Tmpfs;
  let sidecar: SidecarProcess;
  const holds: Array<{ release(): void }> = [];
  beforeAll(async () => {
    stub = await startStub({ window: 8192 });
    volume = await mountTmpfs(64 * 1024 * 1024);
    sidecar = await startSidecarProcess({
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: volume.dir,
      GUARDIAN_SHUTDOWN_DRAIN_SECONDS: String(DRAIN_SECONDS),
      GUARDIAN_SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS),
    });
  });
  afterAll(async () => {
    for (const h of holds) h.release();
    sidecar?.kill('SIGKILL');
    await sidecar?.exited;
    await stub?.close();
    await volume?.unmount();
  });

  /** Starts a streamed answer the stub holds after its first event until released. */
  async function held<T>(start: () => Promise<T>): Promise<{ value: T; release(): void }> {
    const hold = stub.holdNextStream();
    holds.push(hold);
    const value = await start();
    await hold.firstEventSent;
    return { value, release: () => hold.release() };
  }

  it('drains, lets in-flight streams finish, ends the rest with an error event, and exits 0', async () => {
    const url = sidecar.url;
    const port = new URL(url).port;
    // Kept to the grace's end: an Anthropic stream and an OpenAI one.
    const messages = await held(() => stream(url, PATHS.messages, MESSAGES));
    const chat = await held(() => stream(url, PATHS.chat, CHAT));
    // Finished during the grace, after the listener has closed: chat streams on raw sockets, so that a request can
    // still be sent on their connections once the listener no longer takes new ones (one for a proxied path, one
    // for guardian's own: the ProxyFront and Fastify answer them).
    const kept = await Promise.all(
      ['proxied', 'own'].map(async () => {
        const socket = connect(Number(port), '127.0.0.1');
        const received = collect(socket);
        const hold = await held(async () => {
          socket.write(rawRequest('POST', PATHS.chat, port, CHAT));
        });
        return { socket, received, release: hold.release };
      }),
    );

    sidecar.kill('SIGTERM');
    // The drain: /readyz says 503 while every request is still served, new connections included.
    expect(
      await until(
        () => readyz(url),
        (r) => r !== 'refused' && r.http === 503,
      ),
    ).toEqual({
      http: 503,
      status: 'draining',
    });
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok' });
    const during = await fetch(`${url}${PATHS.chat}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...CHAT, stream: false }),
    });
    expect(during.status).toBe(200);
    expect(during.headers.get('connection')).toBe('close');
    expect((await during.json()) as object).toHaveProperty('choices');
    // Still in the drain once that was answered (the drain is wide): the request was served, not raced.
    expect(await readyz(url)).toEqual({ http: 503, status: 'draining' });

    // The drain is over when a new connection is refused: by then a load balancer reading /readyz has stopped
    // sending here. A request on a connection kept from before is answered in guardian's own shape instead.
    await until(
      () => readyz(url),
      (r) => r === 'refused',
    );
    kept[0]!.socket.write(rawRequest('POST', PATHS.chat, port, { ...CHAT, stream: false }));
    kept[1]!.socket.write(rawRequest('GET', '/readyz', port));
    // Each is parsed before its connection's stream goes on (its bytes are in the socket before the release), so it
    // is answered after the stream, on the same connection, which then closes.
    for (const k of kept) k.release();
    for (const k of kept) {
      const answers = (await k.received).split(/(?=HTTP\/1\.1 )/);
      expect(answers.map((a) => a.split('\r\n')[0])).toEqual([
        'HTTP/1.1 200 OK',
        'HTTP/1.1 503 Service Unavailable',
      ]);
      // The stream in flight finished whole, with its final event and no error.
      expect(answers[0]).toContain('data: [DONE]');
      expect(answers[0]).not.toContain('"error"');
      const refused = answers[1]!;
      expect(refused.toLowerCase()).toContain('\r\nretry-after: 1\r\n');
      expect(refused.toLowerCase()).toContain('\r\nconnection: close\r\n');
      // The JSON of the body, whatever its framing (chunked or by length).
      const body = JSON.parse(refused.slice(refused.indexOf('{'), refused.lastIndexOf('}') + 1)) as {
        error: { code: string; type: string };
      };
      expect(body.error).toMatchObject({ code: 'GUARDIAN_SHUTTING_DOWN', type: 'server_error' });
    }

    // The grace ends with two streams still open: each gets its route's error event and a clean end, never a cut.
    const anthropic = await messages.value.done;
    expect(anthropic.cut).toBe(false);
    expect(anthropic.text).toContain('event: message_start');
    expect(anthropic.text).not.toContain('event: message_stop');
    const anthropicError = /event: error\ndata: (.+)\n\n$/.exec(anthropic.text);
    expect(JSON.parse(anthropicError![1]!)).toMatchObject({
      type: 'error',
      error: { code: 'GUARDIAN_SHUTTING_DOWN' },
    });
    const openai = await chat.value.done;
    expect(openai.cut).toBe(false);
    expect(openai.text).not.toContain('[DONE]');
    const openaiError = /\n\ndata: (\{"error".+)\n\n$/.exec(openai.text);
    expect(JSON.parse(openaiError![1]!)).toMatchObject({ error: { code: 'GUARDIAN_SHUTTING_DOWN' } });

    expect(await sidecar.exited).toEqual({ code: 0, signal: null });
  });
});

// The same shutdown, for streams guardian itself still keeps waiting: keep-alive has sent the status line and its
// frames (issue 28 item 2) while a summary is under way, and the upstream has not answered yet. Such a stream was
// not followed by shutdown (only answers piped from the upstream were), so at the grace's end it was cut with its
// frames and no error event. The summaries are held by the stub for the whole test: whatever the grace, the streams
// are still waiting when it ends, so no clock decides the verdict.
describe('SIGTERM while guardian keeps streams alive waiting on a summary', () => {
  let stub: StubBackend;
  let dataDir: string;
  let sidecar: SidecarProcess;
  let summaries: { release(): void } | undefined;
  beforeAll(async () => {
    stub = await startStub({ window: 8192 });
    summaries = stub.holdSummaries();
    dataDir = await mkdtemp(join(tmpdir(), 'cg-waiting-'));
    sidecar = await startSidecarProcess({
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_RESERVE_OUTPUT: '1024',
      GUARDIAN_KEEPALIVE_MS: '20',
      GUARDIAN_SHUTDOWN_DRAIN_SECONDS: '0',
      GUARDIAN_SHUTDOWN_GRACE_SECONDS: '1',
    });
  });
  afterAll(async () => {
    summaries?.release();
    sidecar?.kill('SIGKILL');
    await sidecar?.exited;
    await stub?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** Over the 6,963-token budget (8192 window, reserve 1024), under the stub's window: a summary compacts it. */
  function overBudget(route: Route, seed: number): unknown {
    const turns: { role: string; content: string }[] = [];
    for (let t = 1; t <= 11; t++) {
      turns.push({ role: 'user', content: `Notes ${seed}.${t}:\n${filler(seed * 100 + t, 330)}` });
      turns.push({ role: 'assistant', content: `Reviewed ${t}.` });
    }
    turns.push({ role: 'user', content: 'What next?' });
    if (route === 'messages') return { model: 'stub-model', max_tokens: 64, stream: true, messages: turns };
    if (route === 'responses') return { model: 'stub-model', stream: true, input: turns };
    return { model: 'stub-model', stream: true, messages: turns };
  }

  it('ends each one with its route error event at the grace, never a cut, and exits 0', async () => {
    const url = sidecar.url;
    const frames: Record<Route, string> = {
      messages: 'event: ping\ndata: {"type": "ping"}\n\n',
      chat: ': keep-alive\n\n',
      responses: ': keep-alive\n\n',
    };
    const routes: Route[] = ['messages', 'chat', 'responses'];
    const readings = await Promise.all(
      routes.map(async (route, i) => {
        const res = await fetch(`${url}${PATHS[route]}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(overBudget(route, i + 1)),
        });
        // The status line came before any upstream answer: keep-alive sent it (the summary is held).
        expect({ route, status: res.status, keepAlive: res.headers.get('x-guardian-keep-alive') }).toEqual({
          route,
          status: 200,
          keepAlive: '20',
        });
        const reading = { route, text: '', cut: false, ended: false };
        const decoder = new TextDecoder();
        void (async () => {
          try {
            for await (const chunk of res.body!)
              reading.text += decoder.decode(chunk as Uint8Array, { stream: true });
          } catch {
            reading.cut = true;
          }
          reading.ended = true;
        })();
        await untilHolds(`a keep-alive frame on ${route}`, () => reading.text.includes(frames[route]));
        return reading;
      }),
    );
    // Each is now waiting on its summary, which the stub holds.
    await untilHolds(
      'a summary asked for each stream',
      () => stub.requests.filter((r) => r.isSummary).length >= 3,
    );

    sidecar.kill('SIGTERM');
    await untilHolds('the three streams to end', () => readings.every((r) => r.ended));
    for (const r of readings) {
      // Frames only, then the route's own error event and a clean end of the body.
      expect({ route: r.route, cut: r.cut }).toEqual({ route: r.route, cut: false });
      const frame = frames[r.route];
      const named = r.route !== 'chat';
      const error = r.text.slice(r.text.lastIndexOf(frame) + frame.length);
      expect(
        r.text
          .slice(0, r.text.length - error.length)
          .split(frame)
          .every((x) => x === ''),
      ).toBe(true);
      const m = (named ? /^event: error\ndata: (.+)\n\n$/ : /^data: (\{"error".+)\n\n$/).exec(error);
      expect({ route: r.route, error: m ? (JSON.parse(m[1]!) as unknown) : error }).toMatchObject({
        route: r.route,
        error: { error: { code: 'GUARDIAN_SHUTTING_DOWN' } },
      });
    }
    // The work behind them was given up (the summaries are still held): nothing kept the process from exiting.
    expect(await sidecar.exited).toEqual({ code: 0, signal: null });
    // Nothing went upstream but the summaries: no request was forwarded after its client was told it failed.
    expect(
      stub.requests.filter(
        (r) => !r.isSummary && !['window', 'tokenize', 'count_tokens'].includes(r.route ?? ''),
      ),
    ).toEqual([]);
  });
});
