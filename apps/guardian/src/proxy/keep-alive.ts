import { UpstreamError, type UpstreamResponse } from '@guardian/upstream';

import { outlineOnce, parseField } from '../formats/json-outline';
import type { OwnedRoute } from '../formats/owned-route';
import { errorFrame, errorFrameOf } from './stream-ending';
import type { ProxiedRequest } from './proxy-front';

/** Anthropic's own keep-alive event: its SDKs skip it (https://docs.anthropic.com/en/docs/build-with-claude/streaming). */
const ANTHROPIC_PING = 'event: ping\ndata: {"type": "ping"}\n\n';
/** An SSE comment line (WHATWG HTML §9.2.6, a line starting with a colon): every SSE parser ignores it. */
const SSE_COMMENT = ': keep-alive\n\n';
/** The most of an upstream error body read into the error event: error bodies are small; a huge one is cut. */
const ERROR_BODY_LIMIT = 64 * 1024;

/**
 * Keep-alive bytes for a streamed request while guardian itself makes it wait (a summary, an exact count, another
 * replica's memo lock: issue 28 item 2). A client gives up on a stream that stays silent (Claude Code after 300 s), and
 * a slow backend summarising a long stretch gets there. After `periodMs` of waiting the status line goes out (200,
 * `text/event-stream`) with the route's keep-alive frame, and one more frame each period after, until the upstream
 * answers. Once the status line is out, the upstream's answer is relayed without its own head, and a failure (an
 * upstream error status, an unreachable upstream) arrives as the route's SSE error event, never as a cut connection.
 *
 * Nothing here changes what goes upstream: the frames go to the client only. A request that is not streamed
 * (`"stream": true` absent) is never kept alive: its client waits for one JSON body and a 200 sent early would hide
 * the real status. Before the first frame is due nothing is sent, so a request guardian decides quickly is answered
 * exactly as before, upstream headers and all.
 */
export class KeepAlive {
  private timer: NodeJS.Timeout | undefined;
  private streamed: boolean | undefined;
  /** Stops shutdown's following of the stream while guardian waits (OpenStreams.wait); set once committed. */
  private unfollow: (() => void) | undefined;
  /** The status line and at least one frame have gone out. */
  committed = false;
  private readonly route: OwnedRoute;
  private readonly periodMs: number;
  private readonly ownHeaders: Record<string, string>;
  private readonly abandon: () => void;

  constructor(
    private readonly p: ProxiedRequest,
    opts: {
      route: OwnedRoute;
      periodMs: number;
      /** Guardian's own headers known before the wait (a session header's warning): the early head carries them. */
      ownHeaders?: Record<string, string>;
      /** Gives up the request's work (its upstream calls): shutdown ended the stream before the upstream answered. */
      abandon?: () => void;
    },
  ) {
    this.route = opts.route;
    this.periodMs = opts.periodMs;
    this.ownHeaders = opts.ownHeaders ?? {};
    this.abandon = opts.abandon ?? (() => undefined);
  }

  /** Starts counting the wait (again); a no-op with keep-alive off or already counting. */
  start(): void {
    if (this.periodMs <= 0 || this.timer) return;
    this.timer = setTimeout(() => this.beat(), this.periodMs);
    this.timer.unref();
  }

  /**
   * Guardian's own wait is over and the upstream's begins. Before the status line, nothing was sent and none will be:
   * the upstream's own time to its head is the client's to wait, as without guardian. After it, the frames go on, so
   * the stream is never silent for a period while the answer is still to come.
   */
  handOver(): void {
    if (!this.committed) this.stop();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private beat(): void {
    this.timer = undefined;
    const { res } = this.p;
    if (res.destroyed || res.writableEnded) return;
    if (!this.committed) {
      if (res.headersSent || !this.isStreamed()) return;
      res.writeHead(200, {
        ...this.ownHeaders,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-guardian-keep-alive': String(this.periodMs),
      });
      this.committed = true;
      // From here the client holds a stream: shutdown ends it with the route's error event, not a cut (issue 30).
      this.unfollow = this.p.streams.wait(this.p, () => {
        this.stop();
        this.abandon();
      });
    }
    res.write(this.route === 'messages' ? ANTHROPIC_PING : SSE_COMMENT);
    this.start();
  }

  private isStreamed(): boolean {
    if (this.streamed === undefined) {
      const body = this.p.body;
      const o = body && outlineOnce(body, []);
      this.streamed = o !== undefined && parseField(body!, o, 'stream') === true;
    }
    return this.streamed;
  }

  /**
   * Relays an answer after the status line went out: an SSE answer is piped on (its head is dropped: the client has
   * one); anything else (an error status, a JSON body) is read and sent as the route's error event, the upstream's own
   * error body unchanged when it is an error body an SDK understands (one with `error`). Guardian's own headers that
   * became known only after the head went out (`X-Guardian-Newest-Cut`) come first, as SSE comment lines.
   */
  relayCommitted(
    upstream: UpstreamResponse,
    settle: (upstreamError: boolean) => void,
    lateHeaders: Record<string, string> = {},
  ): void {
    this.stop();
    this.unfollow?.();
    const { res } = this.p;
    const type = upstream.headers['content-type'];
    const sse = typeof type === 'string' && type.startsWith('text/event-stream');
    if (upstream.status < 400 && sse) {
      const told = headerComments(lateHeaders, this.ownHeaders);
      if (told) res.write(told);
      upstream.body.pipe(res);
      this.p.streams.follow(this.p, upstream);
      upstream.body.once('end', () => settle(false));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    upstream.body.on('data', (chunk: Buffer) => {
      if (size < ERROR_BODY_LIMIT) chunks.push(chunk);
      size += chunk.length;
    });
    upstream.body.once('end', () => {
      settle(upstream.status >= 400);
      res.end(this.errorEvent(upstream.status, Buffer.concat(chunks).toString('utf8')));
    });
  }

  /** Ends the stream with the route's error event for a failure that left no upstream answer at all. */
  fail(err: unknown): void {
    this.stop();
    this.unfollow?.();
    const { res } = this.p;
    if (!res.destroyed && !res.writableEnded) res.end(errorFrame(this.p, err));
  }

  private errorEvent(status: number, text: string): string {
    const parsed = parseObject(text);
    if (parsed && 'error' in parsed) return errorFrameOf(this.p, JSON.stringify(parsed));
    const why =
      status >= 400 ? `the upstream answered ${status}` : 'the upstream answered a stream with no stream';
    return errorFrame(this.p, new UpstreamError('UPSTREAM_BAD_RESPONSE', why, 502));
  }
}

/**
 * Guardian's headers the early head could not carry, as one block of SSE comment lines ending in a blank line:
 * `: x-guardian-newest-cut: omitted_tokens=N; original_tokens=M; span=<ref>`. Every SSE parser skips a comment
 * (WHATWG HTML §9.2.6), the SDKs' included, so a client that does not look for it sees the answer as before; one that
 * does reads the same text the header would have carried (issue 30 item 12). Empty when there is none.
 */
function headerComments(headers: Record<string, string>, sent: Record<string, string> = {}): string {
  const lines = Object.entries(headers)
    .filter(([name]) => !(name in sent))
    .map(([name, value]) => `: ${name}: ${value.replace(/[\r\n]+/g, ' ')}\n`);
  return lines.length === 0 ? '' : `${lines.join('')}\n`;
}

/** `text` as a JSON object, or undefined (an HTML error page, a cut body). */
function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    // Not JSON: the caller answers guardian's own error event instead; nothing is lost but the page's markup.
    return undefined;
  }
}
