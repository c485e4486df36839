import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';

import type { UpstreamResponse } from '@guardian/upstream';

import { ownedRoute } from '../formats/owned-route';
import { apiStyleOf } from '../http/api-style';
import { toHttpError } from '../http/http-error';
import { shuttingDown } from '../http/serving-state';

/** How long a stream caught between two events gets to reach the end of the one it is in before the error frame. */
const EVENT_END_WAIT_MS = 1000;
/** How long the ended streams get to hand their last frame to the socket before every connection is closed. */
const FLUSH_WAIT_MS = 2000;

/** What this file needs of a proxied request (proxy-front.ts's ProxiedRequest has it): its route and its socket. */
export interface StreamedRequest {
  req: IncomingMessage;
  res: ServerResponse;
  url: string;
}

/** One streamed answer being piped to its client, or one whose status line is out while guardian still waits. */
interface OpenStream {
  p: StreamedRequest;
  /** The upstream's body piped to the client; absent while guardian itself keeps the stream alive (`wait`). */
  body?: Readable;
  /** Ends guardian's own wait for a stream ended before the upstream answered (KeepAlive's timer, the request's work). */
  abandon?: () => void;
  /** The answer's bytes so far end where an event ends (a blank line), so a frame of ours can follow. */
  atEventEnd: boolean;
  /** The last bytes seen, for an event end split across two chunks. */
  tail: string;
  ending?: () => void;
}

/**
 * The streamed (SSE) answers in flight, so shutdown ends what is still open at the grace's end with the route's own
 * error event instead of a cut connection (issue 30 item 1): a client sees the stream fail in words its SDK
 * understands (the Anthropic SDK throws on `event: error`, the OpenAI SDK on a data line carrying `error`), never a
 * truncated answer it may take for a whole one. Only answers of `text/event-stream` are followed; the proxy registers
 * each one where it pipes the upstream's body (`follow`), and a stream whose status line keep-alive sent while
 * guardian still waits (a summary, a count) from that moment (`wait`): it was cut without its error event before.
 */
export class OpenStreams {
  private readonly open = new Set<OpenStream>();

  /** Follows the upstream's body piped into `p.res` until the answer is done; a non-SSE answer is not followed. */
  follow(p: StreamedRequest, upstream: UpstreamResponse): void {
    const type = upstream.headers['content-type'];
    if (typeof type !== 'string' || !type.startsWith('text/event-stream')) return;
    const body = upstream.body;
    const s: OpenStream = { p, body, atEventEnd: true, tail: '' };
    this.open.add(s);
    // After the pipe's own listener: when this runs, the chunk has been written to the client.
    body.on('data', (chunk: Buffer) => {
      s.tail = (s.tail + chunk.subarray(-4).toString('latin1')).slice(-4);
      s.atEventEnd = s.tail.endsWith('\n\n') || s.tail.endsWith('\r\n\r\n') || s.tail.endsWith('\r\r');
      if (s.atEventEnd) s.ending?.();
    });
    p.res.once('close', () => this.open.delete(s));
  }

  /**
   * Follows a stream whose status line and keep-alive frames are out while guardian's own work goes on (keep-alive.ts):
   * every frame sent is a whole event, so an error event can follow at any moment. Shutdown ends it with that event and
   * calls `abandon` (the request's work is given up: nobody is left to answer). Returns the call that stops following
   * it, made when the upstream's answer is relayed (`follow` takes over) or the stream ends otherwise.
   */
  wait(p: StreamedRequest, abandon: () => void): () => void {
    const s: OpenStream = { p, abandon, atEventEnd: true, tail: '' };
    this.open.add(s);
    const done = (): void => {
      this.open.delete(s);
    };
    p.res.once('close', done);
    return () => {
      p.res.off('close', done);
      done();
    };
  }

  get size(): number {
    return this.open.size;
  }

  /**
   * Ends every stream still open with its route's SSE error event, at the end of the event it is in, and resolves
   * once they have all been handed to their sockets (or after a bounded wait: what is left is closed by the caller).
   */
  async endAll(): Promise<void> {
    const done = [...this.open].map((s) => this.end(s));
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, FLUSH_WAIT_MS + EVENT_END_WAIT_MS);
    });
    await Promise.race([Promise.all(done), bound]);
    clearTimeout(timer);
  }

  private end(s: OpenStream): Promise<void> {
    const { res } = s.p;
    const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
    if (res.writableEnded) return closed;
    let waited: NodeJS.Timeout | undefined;
    const finish = (): void => {
      if (s.ending === undefined) return;
      s.ending = undefined;
      clearTimeout(waited);
      const body = s.body;
      body?.unpipe(res);
      s.abandon?.();
      // An event cut in its middle is closed first, so the error frame is not read as part of it.
      res.end((s.atEventEnd ? '' : '\n\n') + errorFrame(s.p));
      // The upstream is let go once the client has the frame. Its body reports the abort as an error; that is
      // this shutdown's doing, not the upstream's, so it is heard here and not logged as a broken upstream.
      if (body)
        res.once('close', () => {
          body.removeAllListeners('error');
          body.once('error', () => undefined);
          body.destroy();
        });
    };
    s.ending = finish;
    if (s.atEventEnd) finish();
    else {
      waited = setTimeout(finish, EVENT_END_WAIT_MS);
      waited.unref();
    }
    return closed;
  }
}

/** The route's own SSE error event: Anthropic's `event: error`, OpenAI's data line with `error` (and `event: error` on
 * the Responses route, whose stream names every event). */
export function errorFrame(p: Pick<StreamedRequest, 'url' | 'req'>, err: unknown = shuttingDown()): string {
  return errorFrameOf(p, toHttpError(err, apiStyleOf(p.url, p.req.headers)).body);
}

/** The route's SSE error event carrying `body`, a JSON error body on one line (the upstream's own, or guardian's). */
export function errorFrameOf(p: Pick<StreamedRequest, 'url' | 'req'>, body: string): string {
  const named =
    apiStyleOf(p.url, p.req.headers) === 'anthropic' ||
    ownedRoute(p.req.method ?? 'GET', p.url) === 'responses';
  return named ? `event: error\ndata: ${body}\n\n` : `data: ${body}\n\n`;
}
