import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

import type { RecordedRequest, StubBackend } from '@guardian/stub-backend';
import { until } from '../support/wait';

/** The heading guardian puts over the pinned facts inside its summary block (ARCHITECTURE.md#compaction). */
export const PINS_HEADING = "Pinned facts (kept verbatim at the user's request):";
/** The fence that closes guardian's summary block. */
export const FENCE_END = 'CONTEXT-GUARDIAN-ARCHIVE>>>';

const WORDS = [
  'migration',
  'schema',
  'index',
  'billing',
  'service',
  'retry',
  'timeout',
  'queue',
  'worker',
  'handler',
  'cache',
  'latency',
  'deploy',
  'rollback',
  'config',
  'tenant',
  'invoice',
  'ledger',
  'replica',
  'cursor',
  'batch',
  'export',
  'parser',
  'token',
];

/** Deterministic prose of about `words` words in 12-word lines (a seeded generator, so every run is the same). */
export function filler(seed: number, words: number): string {
  let s = (seed * 7919 + 17) >>> 0;
  const next = (): number => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  const lines: string[] = [];
  let line: string[] = [];
  for (let i = 0; i < words; i++) {
    line.push(WORDS[Math.floor(next() * WORDS.length)] ?? 'note');
    if (line.length === 12) {
      lines.push(`${line.join(' ')}.`);
      line = [];
    }
  }
  if (line.length > 0) lines.push(`${line.join(' ')}.`);
  return lines.join('\n');
}

export type Json = Record<string, unknown>;
export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const GENERATION = new Set<string>(['chat', 'messages', 'responses']);

/** Generation requests the client's turns produced (the summariser's own calls left out), in arrival order. */
export function forwarded(stub: StubBackend): RecordedRequest[] {
  return stub.requests.filter((r) => GENERATION.has(r.route) && !r.isSummary);
}

/** The summariser calls guardian made. */
export function summaryCalls(stub: StubBackend): RecordedRequest[] {
  return stub.requests.filter((r) => r.isSummary);
}

/** The chat `messages` of a recorded request. */
export function messagesOf(rec: RecordedRequest): Json[] {
  const json = rec.json;
  if (!isObj(json) || !Array.isArray(json.messages)) throw new Error('recorded request has no messages');
  return json.messages.filter(isObj);
}

/** Every text of a chat message's content, joined. */
export function textOf(m: Json): string {
  if (typeof m.content === 'string') return m.content;
  if (!Array.isArray(m.content)) return '';
  return m.content
    .filter(isObj)
    .map((p) => (typeof p.text === 'string' ? p.text : ''))
    .join('\n');
}

/** Guardian's summary block in a forwarded chat request (it lives in the first system message), if any. */
export function summaryBlock(rec: RecordedRequest): string | undefined {
  for (const m of messagesOf(rec)) {
    if (m.role !== 'system') continue;
    const text = textOf(m);
    const start = text.indexOf('## Context Guardian: archived conversation');
    if (start === -1) return undefined;
    const end = text.indexOf(FENCE_END, start);
    return text.slice(start, end === -1 ? undefined : end + FENCE_END.length);
  }
  return undefined;
}

/** The pinned-facts part of a summary block, one entry per bullet. */
export function pinsIn(block: string): string[] {
  const at = block.indexOf(PINS_HEADING);
  if (at === -1) return [];
  // The list ends at the blank line before the block's next list (the ledger, the stated values).
  return block
    .slice(at + PINS_HEADING.length)
    .split('\n\n')[0]!
    .split('\n')
    .filter((l) => l.startsWith('- '))
    .map((l) => l.slice(2));
}

/** The span refs a summary block names (`<run>/<NNNN>.json`), or [] when it says the originals are not archived. */
export function spanRefsIn(block: string): string[] {
  const m = /The originals are archived as ([^\n]*?)\. To recall/.exec(block);
  return m?.[1] ? m[1].split(', ') : [];
}

/** One span file as written under `<data>/spans/<run>/NNNN.json` (docs/ARCHIVE_FORMAT.md §2). */
export interface SpanFile {
  ref: string;
  kind: string;
  span: number;
  first_index: number;
  message_count: number;
  messages: unknown[];
  summary: string | null;
  continues: string | null;
  oversized: boolean;
  original_tokens: number | null;
}

/** Every span of every run under a span folder, oldest run and number first. */
export async function readSpans(spanDir: string): Promise<SpanFile[]> {
  const out: SpanFile[] = [];
  let runs: string[];
  try {
    // .tlog holds the writers' logs (docs/ARCHIVE_FORMAT.md#the-log), not a run.
    runs = (await readdir(spanDir)).filter((r) => !r.startsWith('.')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  for (const run of runs) {
    let names: string[];
    try {
      names = await readdir(join(spanDir, run));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') continue;
      throw err;
    }
    const spans = names.filter((n) => /^\d{4,}\.json$/.test(n)).sort((a, b) => parseInt(a) - parseInt(b));
    for (const name of spans) {
      const json = JSON.parse(await readFile(join(spanDir, run, name), 'utf8')) as Omit<SpanFile, 'ref'>;
      out.push({ ...json, ref: `${run}/${name}` });
    }
  }
  return out;
}

/** The compaction log lines (ARCHITECTURE.md#files) written under `<data>/log`. */
export async function readLog(dataDir: string): Promise<Json[]> {
  const dir = join(dataDir, 'log');
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.jsonl')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const lines: Json[] = [];
  for (const name of names) {
    for (const line of (await readFile(join(dir, name), 'utf8')).split('\n')) {
      if (line.trim()) lines.push(JSON.parse(line) as Json);
    }
  }
  return lines;
}

/** GET a guardian JSON endpoint: status and parsed body. */
export async function getJson(url: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(url);
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
}

/** POST a chat request with raw fetch (so tests can send guardian headers and see response headers). */
export async function postChat(
  baseURL: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: Json }> {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as Json };
}

/** Waits until `check` holds (usage records are written after the answer ends), or throws after ~2 s. */
export async function eventually<T>(check: () => Promise<T | undefined>): Promise<T> {
  let value: T | undefined;
  await until(
    'a state that settles behind the answer',
    async () => (value = await check()) !== undefined,
    20,
  );
  return value as T;
}

/**
 * How the sidecar counts in a test that must hold either way: exactly through the backend's /tokenize, or with the
 * tokenizer never answering in time (issue 30 item 8: every count falls back to the estimate, as a /tokenize timeout
 * on a loaded machine did). The stub holds each /tokenize for a minute and guardian waits 1 ms, so every exact count
 * fails whatever the machine; what is forwarded must keep every promise both ways.
 */
export const COUNTING = [
  { counting: 'exact counts', stub: {}, env: {} },
  {
    counting: 'the tokenizer timing out',
    stub: { tokenizeDelayMs: 60_000 },
    env: { GUARDIAN_TOKENIZE_TIMEOUT_MS: '1' },
  },
] as const;
