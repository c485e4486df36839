import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

import { CodedError } from '@guardian/errors';

import type {
  CaptureAnswer,
  CaptureRequest,
  EventsAnswer,
  ReadyAnswer,
  StatsAnswer,
  UsageAnswer,
} from './api-types';

// The status line runs on every prompt of a client and imports this file, so it uses node:http, node:https and the
// few lines of libs/errors at run time (no HTTP library, no validator: zod's load time would be paid on every prompt).

/** Why a call to the sidecar gave no usable answer. An HTTP refusal carries the sidecar's own code instead. */
export type ClientErrorCode =
  'SIDECAR_BAD_URL' | 'SIDECAR_UNREACHABLE' | 'SIDECAR_TIMEOUT' | 'SIDECAR_BAD_REPLY' | 'SIDECAR_HTTP_STATUS';

/**
 * A failed call, with a stable `code`: one of {@link ClientErrorCode}, or, when the sidecar refused with a body of its
 * own, that body's code (`ARCHIVE_NOT_FOUND`, `GUARDIAN_TOKEN_REQUIRED`...), so a tool prints what it would print
 * reading the archive itself.
 */
export class GuardianClientError extends CodedError<string> {
  override readonly name = 'GuardianClientError';
  constructor(
    // A ClientErrorCode, or the code the sidecar answered with.
    code: string,
    message: string,
    /** The HTTP status, when the sidecar answered. */
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

export interface GuardianClientOptions {
  /** The sidecar's base URL (`http://127.0.0.1:8786`, or behind a path prefix `https://team.example/cg/`). */
  url: string;
  /** Sent as X-Guardian-Token (never Authorization, which is the upstream's). */
  token?: string;
  /** One deadline per call for connect, headers and body together. */
  timeoutMs: number;
  /** Bigger answers are refused (a span read is at most a few MB); default 64 MiB. */
  maxReplyBytes?: number;
}

/** A reply as it came: its status, the parsed JSON body (null when empty or not JSON) and its bytes. */
export interface RawReply {
  status: number;
  body: unknown;
  bytes: Buffer;
}

export type Query = Record<string, string | number | undefined>;

/**
 * The one client of guardian's own HTTP surface (`/readyz`, `/guardian/*`), shared by the status line, the doctor,
 * the MCP server, the recall CLI and the Claude Code hooks. Typed by the same answer types the sidecar returns.
 */
export class GuardianClient {
  private readonly base: URL;

  constructor(private readonly opts: GuardianClientOptions) {
    let base: URL;
    try {
      base = new URL(opts.url.endsWith('/') ? opts.url : `${opts.url}/`);
    } catch (cause: unknown) {
      throw new GuardianClientError('SIDECAR_BAD_URL', `not a URL: ${opts.url}`, undefined, { cause });
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:')
      throw new GuardianClientError('SIDECAR_BAD_URL', `not an http(s) URL: ${opts.url}`);
    this.base = base;
  }

  /** `<base>/<path>?<query>`, relative to the base so a sidecar behind a path prefix works. */
  url(path: string, query: Query = {}): URL {
    const target = new URL(path.replace(/^\/+/, ''), this.base);
    for (const [key, value] of Object.entries(query))
      if (value !== undefined) target.searchParams.set(key, String(value));
    return target;
  }

  /**
   * `GET /readyz`: the status and whatever fields came, since "not ready" (503) is an answer the doctor reports, and
   * something else on the port answers too.
   */
  async ready(): Promise<{ status: number; body: Partial<ReadyAnswer> | null }> {
    const reply = await this.send('GET', 'readyz');
    const body =
      typeof reply.body === 'object' && reply.body !== null ? (reply.body as Partial<ReadyAnswer>) : null;
    return { status: reply.status, body };
  }

  /** `GET /guardian/stats`. */
  stats(): Promise<StatsAnswer> {
    return this.getJson<StatsAnswer>('guardian/stats');
  }

  /** `GET /guardian/usage`: a session's (the caller's latest when omitted). */
  usage(session?: string): Promise<UsageAnswer> {
    return this.getJson<UsageAnswer>('guardian/usage', { session });
  }

  /** `GET /guardian/events`: the recent events as one JSON list (the caller's own in team mode). */
  events(): Promise<EventsAnswer> {
    return this.getJson<EventsAnswer>('guardian/events');
  }

  /** `POST /guardian/capture`: Claude Code transcript lines into the sidecar's archive (team mode). */
  capture(req: CaptureRequest): Promise<CaptureAnswer> {
    return this.json<CaptureAnswer>('POST', 'guardian/capture', {}, req);
  }

  /** A GET that must answer 2xx with JSON; anything else throws {@link GuardianClientError}. */
  getJson<T>(path: string, query: Query = {}): Promise<T> {
    return this.json<T>('GET', path, query);
  }

  /**
   * A GET of a file the sidecar serves as bytes (a log's checkpoint, key or tile): null on a 404, its bytes on a 2xx,
   * and the sidecar's refusal for anything else.
   */
  async getBytes(path: string): Promise<Buffer | null> {
    const reply = await this.send('GET', path);
    if (reply.status === 404) return null;
    if (reply.status < 200 || reply.status > 299) throw refusal(reply);
    return reply.bytes;
  }

  private async json<T>(method: 'GET' | 'POST', path: string, query: Query, body?: unknown): Promise<T> {
    const reply = await this.send(method, path, query, body);
    if (reply.status < 200 || reply.status > 299) throw refusal(reply);
    if (typeof reply.body !== 'object' || reply.body === null)
      throw new GuardianClientError('SIDECAR_BAD_REPLY', `${path} did not answer JSON`, reply.status);
    return reply.body as T;
  }

  /** One request within the deadline; the reply whatever its status. */
  send(method: 'GET' | 'POST', path: string, query: Query = {}, body?: unknown): Promise<RawReply> {
    const target = this.url(path, query);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.opts.token !== undefined) headers['x-guardian-token'] = this.opts.token;
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const limit = this.opts.maxReplyBytes ?? 64 * 1024 * 1024;
    return new Promise<RawReply>((resolve, reject) => {
      // No keep-alive agent: a CLI that exits right after must not wait on a pooled socket.
      const outgoing = send(target, { method, headers, agent: false }, (res) => {
        readReply(res, limit).then(resolve, reject);
      });
      const timer = setTimeout(() => {
        const err = new GuardianClientError('SIDECAR_TIMEOUT', `no answer within ${this.opts.timeoutMs} ms`);
        reject(err);
        outgoing.destroy(err);
      }, this.opts.timeoutMs);
      outgoing.on('close', () => clearTimeout(timer));
      outgoing.on('error', (err: NodeJS.ErrnoException) => {
        reject(
          err instanceof GuardianClientError
            ? err
            : new GuardianClientError('SIDECAR_UNREACHABLE', err.code ?? err.message, undefined, {
                cause: err,
              }),
        );
      });
      outgoing.end(payload);
    });
  }
}

function readReply(res: IncomingMessage, limit: number): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit)
        res.destroy(new GuardianClientError('SIDECAR_BAD_REPLY', 'answer too large', res.statusCode));
      else chunks.push(chunk);
    });
    res.on('error', reject);
    res.on('end', () => {
      const bytes = Buffer.concat(chunks);
      const text = bytes.toString('utf8');
      let body: unknown = null;
      try {
        body = text === '' ? null : JSON.parse(text);
      } catch {
        // Not JSON (a proxy's HTML error page, another service on the port): the status tells the caller enough.
        body = null;
      }
      resolve({ status: res.statusCode ?? 0, body, bytes });
    });
  });
}

/** The error for a non-2xx reply: the sidecar's own code and message when it sent them. */
function refusal(reply: RawReply): GuardianClientError {
  const error =
    typeof reply.body === 'object' && reply.body !== null && 'error' in reply.body
      ? reply.body.error
      : undefined;
  const fields = typeof error === 'object' && error !== null ? (error as Record<string, unknown>) : {};
  const code = typeof fields.code === 'string' ? fields.code : 'SIDECAR_HTTP_STATUS';
  const message =
    typeof fields.message === 'string' ? fields.message : `the sidecar answered ${reply.status}`;
  return new GuardianClientError(code, message, reply.status);
}
