import type { EventEmitter } from 'node:events';
import { PassThrough, Readable } from 'node:stream';

import { Agent } from 'undici';

import type { HeaderMap } from './headers';
import { classifyUpstreamError } from './upstream-error';

export interface UpstreamClientOptions {
  origin: string;
  /** Seconds to wait for response headers and between body chunks (GUARDIAN_UPSTREAM_TIMEOUT). */
  timeoutSeconds: number;
  /** Seconds to establish a connection (GUARDIAN_UPSTREAM_CONNECT_TIMEOUT). */
  connectTimeoutSeconds: number;
  /** Told how long each call waited for the upstream's headers (guardian's overhead metric leaves that time out). */
  onWait?: (ms: number) => void;
}

export interface UpstreamRequest {
  method: string;
  /** Path and query on the upstream origin. */
  path: string;
  headers: HeaderMap;
  body?: Buffer;
  /** Aborts the request: an AbortSignal, or an EventEmitter that emits `abort` (undici takes both). */
  signal?: AbortSignal | EventEmitter;
  /** Overrides the default headers timeout (the /tokenize probe uses a short one). */
  timeoutMs?: number;
}

export interface UpstreamResponse {
  status: number;
  headers: HeaderMap;
  body: Readable;
}

/**
 * One keep-alive connection pool to the configured upstream. Every upstream call of the sidecar goes
 * through here: forwarded client requests, summariser calls, window detection and /tokenize.
 */
export class UpstreamClient {
  private readonly agent: Agent;

  constructor(private readonly options: UpstreamClientOptions) {
    this.agent = new Agent({
      connect: { timeout: options.connectTimeoutSeconds * 1000 },
      headersTimeout: options.timeoutSeconds * 1000,
      bodyTimeout: options.timeoutSeconds * 1000,
      keepAliveTimeout: 30_000,
      connections: 256,
      pipelining: 1,
    });
  }

  get origin(): string {
    return this.options.origin;
  }

  /** Sends one request; the body is a stream the caller must consume or destroy. Throws UpstreamError. */
  async request(req: UpstreamRequest): Promise<UpstreamResponse> {
    const started = performance.now();
    try {
      const res = await this.agent.request({
        origin: this.options.origin,
        path: req.path,
        method: req.method,
        headers: req.headers,
        body: req.body,
        signal: req.signal,
        headersTimeout: req.timeoutMs,
        bodyTimeout: req.timeoutMs,
      });
      return { status: res.statusCode, headers: res.headers as HeaderMap, body: res.body };
    } catch (err) {
      throw classifyUpstreamError(err);
    } finally {
      this.options.onWait?.(performance.now() - started);
    }
  }

  /** A small JSON request (window detection, /tokenize, the summariser): reads the whole body, bounded by `maxBytes`. */
  async json(
    req: UpstreamRequest & { maxBytes?: number },
  ): Promise<{ status: number; body: unknown; text: string }> {
    const res = await this.request(req);
    const text = await readBounded(res.body, req.maxBytes ?? 8 * 1024 * 1024);
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON: callers read `text` (an error page, a plain-text answer); `body` stays undefined by design.
      body = undefined;
    }
    return { status: res.status, body, text };
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Reads a stream to a string, refusing more than `maxBytes` (the stream is destroyed then). */
export async function readBounded(stream: Readable, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      stream.destroy();
      throw classifyUpstreamError(
        Object.assign(new Error(`upstream body over ${maxBytes} bytes`), { code: 'BODY_TOO_LARGE' }),
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Reads the start of a body without losing any of it: `text` is the whole body when it ends within `maxBytes`;
 * past that, `text` is undefined and `body` replays what was read followed by the rest, still streaming. An error
 * answer is read to recognise an overflow, and one too big for that still reaches the client whole (issue 12).
 */
export function peekBody(stream: Readable, maxBytes: number): Promise<{ text?: string; body: Readable }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      size += chunk.length;
      if (size <= maxBytes) return;
      cleanup();
      stream.pause();
      const out = new PassThrough();
      for (const c of chunks) out.write(c);
      stream.once('error', (err: Error) => out.destroy(err));
      stream.pipe(out);
      resolve({ body: out });
    };
    const onEnd = (): void => {
      cleanup();
      const all = Buffer.concat(chunks);
      resolve({ text: all.toString('utf8'), body: Readable.from([all]) });
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(classifyUpstreamError(err));
    };
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
  });
}
