import pino, { type DestinationStream, type Level, type Logger } from 'pino';

// Secrets that must never reach a log line (HOUSE rule 9, ARCHITECTURE.md#access): the upstream's credentials and
// guardian's own token. Node lower-cases incoming header names; objects we build ourselves may not.
const SECRET_KEYS = [
  'authorization',
  'Authorization',
  'x-api-key',
  'X-Api-Key',
  'cookie',
  'Cookie',
  'set-cookie',
  'x-guardian-token',
  'X-Guardian-Token',
];
// pino's redact paths have no recursive wildcard, so each key is listed at depths 0 to 4, which covers
// `{ req: { headers: { ... } } }` and `{ err: { request: { headers: { ... } } } }`.
const MAX_DEPTH = 4;

/** The redact paths createLogger uses, exported so a test can show what they cover. */
const REDACT_PATHS: readonly string[] = Object.freeze(
  Array.from({ length: MAX_DEPTH + 1 }, (_, depth) => '*.'.repeat(depth)).flatMap((prefix) =>
    SECRET_KEYS.map((key) => `${prefix.replace(/\.$/, '')}["${key}"]`),
  ),
);

export interface LoggerOptions {
  /** pino level (GUARDIAN_LOG_LEVEL); default `info`. */
  level?: Level | 'silent';
  /** Shown as `name` on every line. */
  name?: string;
  /** Where JSON lines go; default stdout. The MCP server passes stderr, since its stdout is protocol. */
  destination?: DestinationStream;
}

/** A JSON logger with secret headers redacted wherever they appear, up to four levels deep. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const options = {
    level: opts.level ?? 'info',
    redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...(opts.name === undefined ? {} : { name: opts.name }),
  };
  return opts.destination === undefined ? pino(options) : pino(options, opts.destination);
}

// Keys seen per logger. Keys are kinds and reasons (bounded sets), but the cap keeps a caller that passes
// something unbounded from growing memory without limit.
const seen = new WeakMap<Logger, Set<string>>();
const MAX_KEYS = 1024;

/**
 * Logs `msg` once per `key` for this logger, at `warn` unless told otherwise; later calls with the same key
 * are dropped. A fail-open path logs once per kind and reason, not once per request (its counter keeps the
 * count). Returns true when the line was written.
 */
export function logOnce(
  logger: Logger,
  key: string,
  fields: Record<string, unknown>,
  msg: string,
  level: 'info' | 'warn' | 'error' = 'warn',
): boolean {
  let keys = seen.get(logger);
  if (keys === undefined) {
    keys = new Set();
    seen.set(logger, keys);
  }
  if (keys.has(key) || keys.size >= MAX_KEYS) return false;
  keys.add(key);
  logger[level]({ ...fields, once: key }, msg);
  return true;
}
