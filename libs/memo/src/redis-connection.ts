import Redis from 'ioredis';
import { codeOf } from '@guardian/errors';
import { MemoError, type MemoErrorCode } from './memo-error';

/** Where the memo reports an outage and a recovery; pino's logger fits. Never given keys or values. */
export interface MemoLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** For /readyz, which reports Redis but never waits for it (ARCHITECTURE.md#fail-open rule 2). */
export type RedisMemoStatus = 'ready' | 'connecting' | 'down';

/** The outcome of the start-up connect attempt; `reason` names the cause in words an operator can act on. */
export interface RedisConnectResult {
  ok: boolean;
  code?: MemoErrorCode;
  reason?: string;
}

export interface RedisConnectionOptions {
  url: string;
  commandTimeoutMs: number;
  connectTimeoutMs: number;
  logger?: MemoLogger;
}

// Reconnect on its own with a capped exponential backoff, so a Redis that comes back is used again
// within about a second and a Redis that stays away costs one attempt a second.
const MAX_RECONNECT_DELAY_MS = 1000;

/**
 * One ioredis client set to fail fast: every command is bounded by `commandTimeout`, and with no offline queue
 * and no per-request retries a Redis that is down answers at once instead of holding requests. It tracks
 * whether Redis is usable and logs one warning per outage and one info line when it is back.
 */
export class RedisConnection {
  readonly client: Redis;
  readonly target: string;
  private state: RedisMemoStatus = 'connecting';
  private timeoutsInARow = 0;
  private closing = false;
  /** The last rejection of connect() or quit(), kept for debugging; the 'error' event carries the cause. */
  private lastRejection: unknown;

  constructor(private readonly options: RedisConnectionOptions) {
    this.target = describeTarget(options.url);
    this.client = new Redis(options.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs,
      connectTimeout: options.connectTimeoutMs,
      // close() quits gracefully when connected; an unconnected socket needs no grace period, and the
      // 2 s default would hold a shutting-down process open.
      disconnectTimeout: 100,
      retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 5), MAX_RECONNECT_DELAY_MS),
    });
    this.client.on('ready', () => this.up());
    // Without an 'error' listener ioredis prints every failed reconnect to the console.
    this.client.on('error', (err: unknown) => this.down('connection', this.describe(err)));
    this.client.on('close', () => {
      if (this.state === 'ready') this.down('connection', this.describe(new Error('Connection is closed.')));
    });
  }

  status(): RedisMemoStatus {
    return this.state;
  }

  /** Try to connect once at start. Never throws; on failure the client keeps retrying in the background. */
  async connect(): Promise<RedisConnectResult> {
    if (this.client.status === 'ready') return { ok: true };
    const result = new Promise<RedisConnectResult>((resolve) => {
      const finish = (outcome: RedisConnectResult): void => {
        clearTimeout(timer);
        this.client.off('ready', onReady);
        this.client.off('error', onError);
        resolve(outcome);
      };
      const onReady = (): void => finish({ ok: true });
      const onError = (err: unknown): void => {
        const error = this.describe(err);
        finish({ ok: false, code: error.code, reason: error.message });
      };
      const timer = setTimeout(() => {
        const error = new MemoError(
          'MEMO_REDIS_UNAVAILABLE',
          `Redis at ${this.target} did not become ready within ${this.options.connectTimeoutMs} ms`,
        );
        this.down('connect', error);
        finish({ ok: false, code: error.code, reason: error.message });
      }, this.options.connectTimeoutMs);
      timer.unref(); // waiting for an answer must not keep a finished process alive
      this.client.on('ready', onReady);
      this.client.on('error', onError);
    });
    if (this.client.status === 'wait') {
      this.client.connect().catch((err: unknown) => {
        // ioredis rejects with a bare "Connection is closed"; the 'error' event already carried the cause,
        // which connect() reports, and the client keeps reconnecting by itself, so going on is safe.
        this.lastRejection = err;
      });
    }
    return result;
  }

  /** A command answered: if Redis had been marked away (a timeout on a live connection), it is back. */
  succeeded(): void {
    this.timeoutsInARow = 0;
    if (this.state === 'down' && this.client.status === 'ready') this.up();
  }

  /** A command failed: an outage begins unless one is already going on. Bad stored data is no outage. */
  failed(op: string, error: MemoError): void {
    if (error.code === 'MEMO_ENTRY_INVALID') return;
    // A single slow command on a connected client is a hiccup (a busy event loop at a 50 ms bound), not an outage:
    // it is still counted by the caller and answered locally, but the outage is declared only after a few in a row.
    if (
      error.code === 'MEMO_REDIS_TIMEOUT' &&
      this.client.status === 'ready' &&
      ++this.timeoutsInARow < TIMEOUTS_FOR_OUTAGE
    )
      return;
    this.down(op, error);
  }

  /** Wrap anything ioredis threw into a MemoError whose message says what an operator should check. */
  describe(err: unknown): MemoError {
    if (err instanceof MemoError) return err;
    const message = err instanceof Error ? err.message : String(err);
    const code = codeOf(err) ?? '';
    const at = `Redis at ${this.target}`;
    if (message.includes('WRONGPASS')) {
      return new MemoError(
        'MEMO_REDIS_AUTH',
        `${at} rejected the password (WRONGPASS): check the credentials in the Redis URL`,
        { cause: err },
      );
    }
    if (message.includes('NOAUTH')) {
      return new MemoError(
        'MEMO_REDIS_AUTH',
        `${at} requires a password and the URL gives none (NOAUTH): use redis://:<password>@host:port`,
        { cause: err },
      );
    }
    if (message.includes('Command timed out')) {
      return new MemoError(
        'MEMO_REDIS_TIMEOUT',
        `${at} did not answer within ${this.options.commandTimeoutMs} ms`,
        { cause: err },
      );
    }
    if (code === 'ECONNREFUSED') {
      return new MemoError(
        'MEMO_REDIS_UNAVAILABLE',
        `${at} refused the connection: nothing listens there (ECONNREFUSED)`,
        { cause: err },
      );
    }
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      return new MemoError('MEMO_REDIS_UNAVAILABLE', `${at}: host name not found (${code})`, { cause: err });
    }
    if (code === 'ETIMEDOUT') {
      return new MemoError(
        'MEMO_REDIS_UNAVAILABLE',
        `${at}: connecting timed out after ${this.options.connectTimeoutMs} ms`,
        { cause: err },
      );
    }
    if (message.includes("isn't writeable") || message.includes('Connection is closed')) {
      return new MemoError('MEMO_REDIS_UNAVAILABLE', `${at} is not connected`, { cause: err });
    }
    if (err instanceof Error && err.name === 'ReplyError') {
      return new MemoError('MEMO_REDIS_FAILED', `${at} refused a command: ${message}`, { cause: err });
    }
    return new MemoError('MEMO_REDIS_UNAVAILABLE', `${at}: ${message}`, { cause: err });
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.client.status === 'ready') {
      try {
        await this.client.quit();
        return;
      } catch (err) {
        // QUIT itself failed (Redis went away meanwhile): drop the socket below, nothing is left to flush.
        this.lastRejection = err;
      }
    }
    this.client.disconnect();
  }

  private up(): void {
    if (this.closing || this.state === 'ready') return;
    const previous = this.state;
    this.state = 'ready';
    const message = previous === 'down' ? 'memo redis is back; using it again' : 'memo redis connected';
    this.options.logger?.info({ redis: this.target }, message);
  }

  private down(op: string, error: MemoError): void {
    if (this.closing || this.state === 'down') return;
    this.state = 'down';
    this.options.logger?.warn(
      { redis: this.target, op, code: error.code, reason: error.message },
      'memo redis unavailable; answering from the in-process memo until it is back',
    );
  }
}

/** Consecutive command timeouts on a connected client that count as an outage. */
const TIMEOUTS_FOR_OUTAGE = 3;

/** host:port (and tls) of a Redis URL, without credentials, for logs and messages. */
function describeTarget(url: string): string {
  try {
    const parsed = new URL(url);
    const port = parsed.port === '' ? '6379' : parsed.port;
    return `${parsed.protocol === 'rediss:' ? 'rediss' : 'redis'}://${parsed.hostname}:${port}`;
  } catch (err) {
    // Only a label for messages; the URL itself is validated where the options are read.
    return `Redis (unparsable URL: ${err instanceof Error ? err.message : 'invalid'})`;
  }
}
