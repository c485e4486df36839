// What the drift probe and the keep-facts bench share: the options every retention tool takes, a sidecar started
// in-process in front of a recording tap, and one client turn sent through it and taken apart again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { startStub, type StubBackend } from '@guardian/stub-backend';
import { createLogger } from '@guardian/telemetry';
import { request } from 'undici';
import { z } from 'zod';

import { startGuardian } from '../../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../../apps/guardian/src/config/guardian-config';
import { SLOW_BACKEND_MS, startTap, type Tap, type TapCall } from './tap';

export const commonOptions = z.object({
  /** OpenAI-compatible base URL, `/v1` included; unset: the project's stub, started here, in `recall` mode. */
  upstream: z.url().optional(),
  model: z.string().min(1).default('stub-model'),
  /** The window guardian compacts for (GUARDIAN_NUM_CTX), whatever the backend's own. */
  window: z.coerce.number().int().min(2048),
  /** GUARDIAN_SUMMARY_TIMEOUT_MS; a slow CPU backend may need more than the default to write a summary. */
  'summary-timeout-ms': z.coerce.number().int().positive().optional(),
  /**
   * GUARDIAN_RESERVE_OUTPUT: a smaller reserve caps the summary at fewer tokens (half the reserve, 256 to 2,048),
   * which a CPU backend writing a few tokens a second needs; it also raises the budget. Unset: the sidecar's default.
   */
  'reserve-output': z.coerce.number().int().positive().optional(),
  /** Sent upstream as `Authorization: Bearer ...` (a hosted backend); never printed. */
  'api-key': z.string().optional(),
  json: z.boolean().default(false),
});
export type CommonOptions = z.infer<typeof commonOptions>;

/** The settings a run changed from the sidecar's defaults, for the report's first line. */
export function settingsLine(
  opts: Omit<CommonOptions, 'window'> & { window?: number },
  extra: Record<string, number | undefined> = {},
): string {
  const set: Record<string, number | string | undefined> = {
    GUARDIAN_NUM_CTX: opts.window ?? 'each window',
    GUARDIAN_RESERVE_OUTPUT: opts['reserve-output'],
    GUARDIAN_SUMMARY_TIMEOUT_MS: opts['summary-timeout-ms'],
    ...extra,
  };
  const changed = Object.entries(set).filter(([, v]) => v !== undefined);
  return `${changed.map(([k, v]) => `${k}=${v}`).join(', ')}, every other setting default`;
}

/** Parses `--name value` / `--flag` arguments with `schema` (zod is the one validator: HOUSE rule 2). */
export function parseOptions<S extends z.ZodObject>(
  schema: S,
  args: readonly string[],
  flags: string[],
): z.infer<S> {
  const { values } = parseArgs({
    args: args.filter((a) => a !== '--'),
    options: Object.fromEntries(
      Object.keys(schema.shape).map((k) => [
        k,
        { type: flags.includes(k) ? ('boolean' as const) : ('string' as const) },
      ]),
    ),
    strict: true,
  });
  const parsed = schema.safeParse(values);
  if (!parsed.success) throw new Error(`invalid options: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

export interface Upstream {
  /** Base URL, `/v1` included. */
  url: string;
  /** What the figures name as the backend. */
  label: string;
  stub?: StubBackend;
  close(): Promise<void>;
}

/**
 * The named upstream, or the project's stub (hard window `window`, `recall` answers) when none is named; `blank`: the
 * stub's summaries hold nothing of the conversation (`blankSummaries`) instead of listing every `FACT-` token.
 */
export async function openUpstream(opts: CommonOptions, stub: { blank?: boolean } = {}): Promise<Upstream> {
  if (opts.upstream) return { url: opts.upstream, label: opts.upstream, close: async () => undefined };
  const backend = await startStub({
    window: opts.window,
    answer: 'recall',
    maxRecorded: 64,
    blankSummaries: stub.blank === true,
  });
  return {
    url: backend.baseUrl,
    label: `stub (libs/stub-backend, recall answers, ${stub.blank ? 'summaries that hold nothing of the conversation' : 'summaries listing every FACT- token they read'})`,
    stub: backend,
    close: () => backend.close(),
  };
}

export interface Through {
  url: string;
  tap: Tap;
  stats(): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** A fresh sidecar (its own temporary data folder, removed on close) in front of a tap in front of the upstream. */
export async function startThrough(
  upstream: Upstream,
  opts: CommonOptions,
  env: Record<string, string>,
): Promise<Through> {
  const tap = await startTap(upstream.url);
  const dataDir = mkdtempSync(join(tmpdir(), 'cg-retention-'));
  const config = GuardianConfig.fromEnv(
    {
      GUARDIAN_UPSTREAM_URL: tap.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_NUM_CTX: String(opts.window),
      GUARDIAN_LOG_LEVEL: 'warn',
      ...(opts['summary-timeout-ms']
        ? { GUARDIAN_SUMMARY_TIMEOUT_MS: String(opts['summary-timeout-ms']) }
        : {}),
      ...(opts['reserve-output'] ? { GUARDIAN_RESERVE_OUTPUT: String(opts['reserve-output']) } : {}),
      ...env,
    },
    { version: 'retention', home: dataDir },
  );
  // Logs to stderr: stdout is the tool's report.
  const guardian = await startGuardian(config, createLogger({ level: 'warn', destination: process.stderr }), {
    port: 0,
  });
  return {
    url: guardian.url,
    tap,
    stats: async () =>
      (await (await fetch(`${guardian.url}/guardian/stats`)).json()) as Record<string, unknown>,
    async close() {
      await guardian.close(200);
      await tap.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type ChatMessage = { role: 'system' | 'user' | 'assistant'; content: string };

export interface Turn {
  status: number;
  /** The answer the client got. */
  answer: string;
  /** The request body the sidecar forwarded for this turn (its last, after any overflow retry), if any. */
  forwarded?: string;
  /** The summariser calls this turn caused. */
  summaries: TapCall[];
}

/** One client request: straight to `base` (an upstream, no tap) or through a sidecar, with the calls it caused. */
export async function sendTurn(
  target: { base: string; tap?: Tap },
  opts: CommonOptions,
  messages: readonly ChatMessage[],
  maxTokens: number,
): Promise<Turn> {
  const before = target.tap?.calls.length ?? 0;
  const res = await request(`${target.base}/chat/completions`, {
    method: 'POST',
    // A CPU backend can take minutes to summarise and answer; undici's 5-minute default would end the turn.
    headersTimeout: SLOW_BACKEND_MS,
    bodyTimeout: SLOW_BACKEND_MS,
    headers: {
      'content-type': 'application/json',
      'x-guardian-session': 'retention',
      ...(opts['api-key'] ? { authorization: `Bearer ${opts['api-key']}` } : {}),
    },
    // temperature 0: the same history asks the same question the same way on every run.
    body: JSON.stringify({
      model: opts.model,
      messages,
      max_tokens: maxTokens,
      temperature: 0,
      stream: false,
    }),
  });
  const text = await res.body.text();
  let answer = '';
  try {
    const json = JSON.parse(text) as { choices?: { message?: { content?: unknown } }[] };
    const content = json.choices?.[0]?.message?.content;
    answer = typeof content === 'string' ? content : '';
  } catch (err) {
    // An error page is not an answer: it scores as unanswered, and the status says why.
    answer = `(unparsed answer: ${String(err)})`;
  }
  const calls = target.tap?.calls.slice(before) ?? [];
  return {
    status: res.statusCode,
    answer,
    forwarded: calls.filter((c) => !c.summary).at(-1)?.body,
    summaries: calls.filter((c) => c.summary),
  };
}

/** Which of `values` a text holds verbatim (case aside: a model may change a token's case). */
export function present(text: string, values: readonly string[]): string[] {
  const lower = text.toLowerCase();
  return values.filter((v) => lower.includes(v.toLowerCase()));
}

/** A `FACT-<WORD>-<4 digits>` value, deterministic for a seed and an index. */
export function factValue(seed: number, index: number): string {
  const words = [
    'HERON',
    'ORCA',
    'ELM',
    'LYNX',
    'CEDAR',
    'OTTER',
    'MAPLE',
    'RAVEN',
    'BISON',
    'FERN',
    'KOI',
    'WREN',
  ];
  let s = (seed * 7919 + index * 104729 + 17) >>> 0;
  s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
  return `FACT-${words[(index + seed) % words.length]}-${String(s % 10000).padStart(4, '0')}`;
}
