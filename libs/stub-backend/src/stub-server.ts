import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { answerApplyTemplate, answerCountTokens, answerTokenize, type JsonAnswer } from './counting';
import { discoveryAnswer } from './discovery';
import { answerGeneration, type GenerationContext } from './generation';
import { resolveOptions, StubError, type ResolvedOptions } from './stub-options';
import { countPrompt, countTokens } from './token-count';
import type { GenerationRoute, RecordedRequest, StubBackend, StubFlavor, StubOptions } from './types';

/** A `holdNextStream()` barrier. */
interface Hold {
  released: Promise<void>;
  release(): void;
  markSent(): void;
}

function newHold(): { hold: Hold; firstEventSent: Promise<void> } {
  let release = (): void => undefined;
  let markSent = (): void => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const firstEventSent = new Promise<void>((resolve) => (markSent = resolve));
  return { hold: { released, release, markSent }, firstEventSent };
}

const GENERATION: Record<string, GenerationRoute> = {
  '/v1/chat/completions': 'chat',
  '/v1/messages': 'messages',
  '/v1/responses': 'responses',
};

/** The stub upstream: node:http with no framework, so benchmarks measure guardian and not the stub. */
class StubServer implements StubBackend {
  readonly requests: RecordedRequest[] = [];
  private readonly server: Server;
  private origin = '';
  private seq = 0;
  /** Fabricated summaries answered so far: each answers the next shape (issue 32 item 7). */
  private fabricated = 0;
  private closed = false;
  private failures: { status: number; body: unknown }[] = [];
  private overflows: StubFlavor[] = [];
  private pendingHolds: Hold[] = [];
  private summaryHolds: Hold[] = [];
  private readonly activeHolds = new Set<Hold>();
  /** Set by holdSummaries(): summariser calls wait on it until released. */
  private summaryHold: Hold | undefined;

  constructor(private readonly options: ResolvedOptions) {
    this.server = createServer({ noDelay: true, keepAlive: true }, (req, res) => this.receive(req, res));
  }

  get url(): string {
    return this.origin;
  }

  get baseUrl(): string {
    return `${this.origin}/v1`;
  }

  get window(): number {
    return this.options.window;
  }

  countTokens(text: string): number {
    return countTokens(text);
  }

  countPrompt(json: unknown, route: GenerationRoute): number {
    return countPrompt(json, route);
  }

  holdNextStream(): { release(): void; firstEventSent: Promise<void> } {
    const { hold, firstEventSent } = newHold();
    this.pendingHolds.push(hold);
    return { release: () => hold.release(), firstEventSent };
  }

  holdSummaries(): { release(): void; arrived: Promise<void> } {
    const { hold, firstEventSent } = newHold();
    this.summaryHold?.release();
    this.summaryHold = hold;
    this.activeHolds.add(hold);
    return {
      release: () => {
        if (this.summaryHold === hold) this.summaryHold = undefined;
        hold.release();
      },
      arrived: firstEventSent,
    };
  }

  holdNextSummary(): { release(): void; received: Promise<void> } {
    // The same barrier as a held stream: `markSent` marks the summary request's arrival here.
    const { hold, firstEventSent } = newHold();
    this.summaryHolds.push(hold);
    return { release: () => hold.release(), received: firstEventSent };
  }

  failNext(status: number, body: unknown): void {
    this.failures.push({ status, body });
  }

  overflowNext(shape?: StubFlavor): void {
    this.overflows.push(shape ?? this.options.flavor);
  }

  reset(): void {
    this.requests.length = 0;
    this.failures = [];
    this.overflows = [];
    this.releaseHolds();
  }

  async listen(): Promise<void> {
    const { host, port } = this.options;
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void =>
        reject(new StubError('STUB_LISTEN_FAILED', `stub cannot listen on ${host}:${port}`, { cause: err }));
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        resolve();
      });
    });
    const address = this.server.address() as AddressInfo;
    const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    this.origin = `http://${shownHost}:${address.port}`;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.releaseHolds();
    this.server.closeAllConnections();
    await new Promise<void>((resolve, reject) => this.server.close((err) => (err ? reject(err) : resolve())));
  }

  private releaseHolds(): void {
    for (const hold of [...this.pendingHolds, ...this.activeHolds, ...this.summaryHolds]) hold.release();
    this.pendingHolds = [];
    this.summaryHolds = [];
    this.activeHolds.clear();
    this.summaryHold = undefined;
  }

  private receive(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      this.answer(req, res, Buffer.concat(chunks)).catch((err: unknown) => this.crash(res, err));
    });
  }

  /** An unexpected error inside the stub: a 500 the test will see, or a reset stream if bytes were sent. */
  private crash(res: ServerResponse, err: unknown): void {
    process.stderr.write(`stub-backend: internal error: ${err instanceof Error ? err.stack : String(err)}\n`);
    if (res.headersSent) res.destroy(err instanceof Error ? err : undefined);
    else this.sendJson(res, undefined, { status: 500, body: { error: { message: 'stub internal error' } } });
  }

  private record(req: IncomingMessage, body: Buffer): RecordedRequest {
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      body,
      json: parseJson(body),
      route: 'other',
      isSummary: false,
      status: 0,
      aborted: false,
      receivedAt: performance.now(),
    };
    this.requests.push(record);
    if (this.requests.length > this.options.maxRecorded) this.requests.shift();
    return record;
  }

  private async answer(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const record = this.record(req, body);
    const gone = new AbortController();
    res.on('close', () => {
      if (res.writableFinished) return;
      record.aborted = true;
      gone.abort();
    });
    // A caller that hangs up ends the wait, so a delay can stand for a hung backend (minutes long) without its timer
    // holding the test process after the caller has gone. Resolves false when the caller went.
    const wait = (ms: number): Promise<boolean> =>
      delay(ms, undefined, { signal: gone.signal }).then(
        () => true,
        () => false,
      );
    const pathname = record.path.split('?')[0] ?? '/';
    const { options } = this;
    if (options.latencyMs > 0 && !(await wait(options.latencyMs))) return;

    const generation = record.method === 'POST' ? GENERATION[pathname] : undefined;
    if (generation) {
      record.route = generation;
      const answer = answerGeneration(generation, record, this.generationContext());
      // A slow (or, with a delay past the caller's patience, hung) summariser: the client's own requests are not held.
      if (record.isSummary && options.summaryDelayMs > 0 && !(await wait(options.summaryDelayMs))) return;
      const held = record.isSummary ? (this.summaryHolds.shift() ?? this.summaryHold) : undefined;
      if (held) {
        held.markSent();
        await held.released;
        if (gone.signal.aborted) return;
      }
      if (answer.kind === 'json') return this.sendJson(res, record, answer);
      return this.sendEvents(res, record, answer.events, wait);
    }
    if (record.method === 'POST' && pathname === '/v1/messages/count_tokens' && options.countTokensEndpoint) {
      record.route = 'count_tokens';
      return this.sendJson(res, record, answerCountTokens(record));
    }
    if (record.method === 'POST' && pathname === '/tokenize' && options.tokenize) {
      record.route = 'tokenize';
      if (options.tokenizeDelayMs > 0 && !(await wait(options.tokenizeDelayMs))) return;
      return this.sendJson(res, record, answerTokenize(record, options));
    }
    if (
      record.method === 'POST' &&
      pathname === '/apply-template' &&
      options.tokenize &&
      options.flavor === 'llamacpp'
    ) {
      record.route = 'tokenize';
      return this.sendJson(res, record, answerApplyTemplate(record));
    }
    const ctx = { window: options.window, model: options.model };
    const discovered = discoveryAnswer(options.flavor, record.method, pathname, ctx);
    if (discovered !== undefined) {
      record.route = 'window';
      return this.sendJson(res, record, { status: 200, body: discovered });
    }
    if (record.method === 'HEAD' && pathname === '/')
      return this.sendJson(res, record, { status: 200, body: '' });
    if (record.method === 'GET' && pathname === '/health') {
      return this.sendJson(res, record, { status: 200, body: { status: 'ok' } });
    }
    const message = `no route for ${record.method} ${pathname}`;
    this.sendJson(res, record, {
      status: 404,
      body: { error: { message, type: 'not_found_error', code: 404 } },
    });
  }

  private generationContext(): GenerationContext {
    return {
      window: this.options.window,
      flavor: this.options.flavor,
      shortSummaries: this.options.shortSummaries,
      fabricatedSummaries: this.options.fabricatedSummaries,
      nextFabricated: () => this.options.fabricatedShape ?? this.fabricated++,
      blankSummaries: this.options.blankSummaries,
      model: this.options.model,
      reply: this.options.reply,
      answer: this.options.answer,
      truncate: this.options.truncate,
      nextSeq: () => ++this.seq,
      takeFailure: () => this.failures.shift(),
      takeForcedOverflow: () => this.overflows.shift(),
    };
  }

  private sendJson(res: ServerResponse, record: RecordedRequest | undefined, answer: JsonAnswer): void {
    // The client may have gone away during a latency or tokenize delay; there is no one left to answer.
    if (res.destroyed) return;
    if (record) {
      record.status = answer.status;
      record.answeredAt = performance.now();
    }
    const text = answer.body === '' ? '' : JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  }

  /**
   * Writes an SSE answer; with a pending hold, event 1 goes out alone and the rest waits for `release()`. With
   * `streamMs`, the events are spread over that long (a caller that hangs up ends it).
   */
  private async sendEvents(
    res: ServerResponse,
    record: RecordedRequest,
    events: string[],
    wait: (ms: number) => Promise<boolean>,
  ): Promise<void> {
    if (res.destroyed) return;
    record.status = 200;
    record.answeredAt = performance.now();
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const hold = this.pendingHolds.shift();
    if (!hold && this.options.streamMs > 0 && events.length > 1) {
      const gap = this.options.streamMs / (events.length - 1);
      res.write(events[0]);
      for (const event of events.slice(1)) {
        if (!(await wait(gap)) || res.destroyed) return;
        res.write(event);
      }
      res.end();
      return;
    }
    if (!hold) {
      res.end(events.join(''));
      return;
    }
    this.activeHolds.add(hold);
    res.write(events[0] ?? '', () => hold.markSent());
    await hold.released;
    this.activeHolds.delete(hold);
    if (!res.destroyed) res.end(events.slice(1).join(''));
  }
}

function parseJson(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    // Not JSON: `json` stays undefined and each route that needs a body answers 400, so the client sees why.
    return undefined;
  }
}

/**
 * Starts a stub upstream on 127.0.0.1 (port 0 by default) with a hard context window.
 * @throws StubError `STUB_INVALID_OPTIONS` for bad options, `STUB_LISTEN_FAILED` when the port is taken.
 */
export async function startStub(options: StubOptions = {}): Promise<StubBackend> {
  const server = new StubServer(resolveOptions(options));
  await server.listen();
  return server;
}
