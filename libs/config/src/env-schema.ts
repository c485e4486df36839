import { z } from 'zod';

// Every GUARDIAN_* variable the sidecar reads, with its default and unit (ARCHITECTURE.md#configuration). The CLIs and
// the MCP server read the variables they share with the sidecar through this same schema (tool-env.ts), so each
// default is declared here once. The README's configuration table lists the same names; test/docs/config-table.spec.ts
// checks both ways.

const flag = (fallback: '0' | '1') =>
  z
    .enum(['0', '1', 'true', 'false', 'yes', 'no', 'on', 'off'], {
      message: 'expected 1/0, true/false, yes/no or on/off',
    })
    .default(fallback)
    .transform((v) => ['1', 'true', 'yes', 'on'].includes(v));

const int = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback);
const fraction = (fallback: number) => z.coerce.number().gt(0).lt(1).default(fallback);
const optionalInt = (min: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return undefined;
      const n = Number(v);
      if (!Number.isInteger(n) || n < min) {
        ctx.addIssue({ code: 'custom', message: `expected an integer >= ${min}` });
        return z.NEVER;
      }
      return n;
    });
const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** Where the sidecar listens, and where every tool looks for it, when GUARDIAN_PORT is unset. */
export const DEFAULT_PORT = 8786;

/** The log levels GUARDIAN_LOG_LEVEL takes (pino's). */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The sidecar's environment: every variable, its validation and its default. */
export const envSchema = z.object({
  GUARDIAN_UPSTREAM_URL: z.url({ protocol: /^https?$/ }).default('http://127.0.0.1:8000/v1'),
  GUARDIAN_HOST: z.string().min(1).default('127.0.0.1'),
  GUARDIAN_PORT: int(DEFAULT_PORT).pipe(z.number().max(65535)),
  GUARDIAN_NUM_CTX: optionalInt(256),
  GUARDIAN_COMPACT_THRESHOLD: fraction(0.85),
  GUARDIAN_RESERVE_OUTPUT: int(8192),
  GUARDIAN_KEEP_RECENT_FRACTION: fraction(0.2),
  GUARDIAN_KEEP_RECENT_MESSAGES: optionalInt(1),
  GUARDIAN_CUT_HEADROOM_TURNS: int(2),
  GUARDIAN_CHARS_PER_TOKEN: z.coerce.number().gt(0).default(3.5),
  GUARDIAN_COUNT_TOOLS: flag('1'),
  GUARDIAN_CALIBRATE: flag('1'),
  GUARDIAN_TOKENIZE_TIMEOUT_MS: int(5000),
  GUARDIAN_UPSTREAM_TIMEOUT: z.coerce.number().positive().default(600),
  GUARDIAN_UPSTREAM_CONNECT_TIMEOUT: z.coerce.number().positive().default(10),
  GUARDIAN_KEEPALIVE_MS: int(3000),
  GUARDIAN_SHUTDOWN_DRAIN_SECONDS: z.coerce.number().min(0).default(5),
  GUARDIAN_SHUTDOWN_GRACE_SECONDS: z.coerce.number().positive().default(60),
  GUARDIAN_MAX_BODY_BYTES: int(67108864, 1024),
  GUARDIAN_DATA_DIR: optionalText,
  GUARDIAN_SPAN_DIR: optionalText,
  GUARDIAN_LOG_DIR: optionalText,
  GUARDIAN_LOG_PATH: optionalText,
  GUARDIAN_RECEIPTS: optionalText,
  GUARDIAN_KEEP_SPANS: int(500),
  GUARDIAN_RETENTION_DAYS: int(0),
  GUARDIAN_SEAL_ANCHOR_DIR: optionalText,
  GUARDIAN_SEAL_ANCHOR_PATH: optionalText,
  // Issue 29: a C2SP note key name has no spaces and no "+" (c2sp.org/signed-note).
  GUARDIAN_LOG_ORIGIN: optionalText.refine((v) => v === undefined || /^[^\s+]+$/.test(v), {
    message: 'a log origin has no spaces and no "+"',
  }),
  GUARDIAN_LOG_KEY_FILE: optionalText,
  GUARDIAN_VERIFIED_DIR: optionalText,
  GUARDIAN_SUMMARY_TIMEOUT_MS: int(60000, 1),
  // Issue 27: serve the providers' compaction protocols (emulate) or forward them (passthrough); auto decides by upstream.
  GUARDIAN_NATIVE_COMPACTION: z.enum(['auto', 'emulate', 'passthrough']).default('auto'),
  GUARDIAN_NATIVE_KEY_FILE: optionalText,
  GUARDIAN_PRECOMPACT_THRESHOLD: z.coerce.number().min(0).lt(1).default(0.8),
  GUARDIAN_PRECOMPACT_CONCURRENCY: int(2, 1),
  GUARDIAN_MIN_SUMMARY_CHARS: int(40),
  GUARDIAN_MIN_TRANSCRIPT_CHARS: int(80),
  GUARDIAN_TOOL_ARG_CHARS: int(300),
  GUARDIAN_SUMMARY_REASONING_EFFORT: optionalText,
  GUARDIAN_SUMMARY_MEMO: flag('1'),
  GUARDIAN_PIN_MAX_CHARS: int(1600),
  // ADR 0012: ~340 tokens, 8% of the 4,096-token budget of an 8k window; at least 12 instructions of up to 90 chars.
  GUARDIAN_LEDGER_MAX_CHARS: int(1200),
  // Issue 32 items 2 and 4: at most three short excerpts; about 20 identifiers of 40 characters.
  GUARDIAN_RECALL_MAX_CHARS: int(1200),
  GUARDIAN_ANCHOR_MAX_CHARS: int(800),
  // Issue 32: the state a session's probes ask about (values, tool ids, the task); ~300 tokens, as the ledger.
  GUARDIAN_STATED_MAX_CHARS: int(1200),
  GUARDIAN_HANDOFF: flag('1'),
  GUARDIAN_CLEAR_TOOL_RESULTS: flag('1'),
  GUARDIAN_DRY_RUN: flag('0'),
  GUARDIAN_CAPTURE: z.enum(['off', 'journal']).default('off'),
  GUARDIAN_COST_PER_1M_INPUT_USD: z.coerce.number().min(0).default(0),
  GUARDIAN_COST_PER_1M_OUTPUT_USD: z.coerce.number().min(0).default(0),
  GUARDIAN_MAX_SESSIONS: int(1024, 1),
  GUARDIAN_REDIS_URL: optionalText.pipe(
    z
      .string()
      .regex(/^rediss?:\/\//, 'expected a redis:// or rediss:// URL')
      .optional(),
  ),
  GUARDIAN_REDIS_PREFIX: z.string().default('guardian:'),
  GUARDIAN_REDIS_TIMEOUT_MS: int(250, 1),
  GUARDIAN_MEMO_TTL: int(604800, 1),
  GUARDIAN_MEMO_LOCK_WAIT_MS: int(30000),
  GUARDIAN_ADMIN_TOKEN: optionalText,
  GUARDIAN_TOKENS_FILE: optionalText,
  GUARDIAN_TOKEN_REQUIRED: flag('0'),
  GUARDIAN_SESSION_HEADER_REQUIRED: flag('0'),
  GUARDIAN_ALLOWED_HOSTS: optionalText,
  GUARDIAN_LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalText,
});

export type GuardianEnv = z.infer<typeof envSchema>;
