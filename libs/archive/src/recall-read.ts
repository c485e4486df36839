import * as path from 'node:path';

import { z } from 'zod';

import { INDEX_FILE, assertSpanNumber, runDir, spanFileName } from './archive-paths';
import {
  assertRunVisible,
  loadJournal,
  loadSpan,
  runFiles,
  scopedRunIds,
  spanNumbers,
} from './archive-reader';
import { buildDigest, estimateTokens, type DigestLine } from './digest';
import { readJsonl } from './jsonl';
import { viewMessage } from './message-text';
import type { ArchiveScope } from './owners';

const DigestLineSchema = z.object({
  span: z.number().int().nonnegative(),
  file: z.string(),
  kind: z.string(),
  created_at: z.string(),
  tokens: z.number(),
  digest: z.string(),
  keywords: z.array(z.string()),
  grams: z.string().optional(),
});

interface DigestEntry extends DigestLine {
  run: string;
  /** `<run>/<NNNN> <time> ~<n>t: <digest> (<keywords>)` */
  line: string;
}

function renderDigest(run: string, d: DigestLine): string {
  const keywords = d.keywords.length > 0 ? ` (${d.keywords.join(', ')})` : '';
  const name = d.file.replace(/\.json$/, '');
  return `${run}/${name} ${d.created_at.slice(0, 16).replace('T', ' ')} ~${d.tokens}t: ${d.digest}${keywords}`;
}

/** Digests of one run: from index.jsonl when present, else built from the span files (older archives). */
export async function runDigests(spanDir: string, run: string): Promise<DigestLine[]> {
  const files = await runFiles(spanDir, run);
  const present = new Set(spanNumbers(files));
  const byspan = new Map<number, DigestLine>();
  if (files.includes(INDEX_FILE)) {
    const { rows } = await readJsonl(path.join(runDir(spanDir, run), INDEX_FILE), DigestLineSchema);
    for (const row of rows) if (present.has(row.span)) byspan.set(row.span, row);
  }
  for (const span of present) {
    if (byspan.has(span)) continue;
    const stored = await loadSpan(spanDir, run, span);
    byspan.set(
      span,
      buildDigest({
        span,
        file: spanFileName(span),
        kind: stored.kind ?? 'compaction',
        created_at: stored.created_at ?? '',
        summary: stored.summary ?? null,
        messages: stored.messages,
      }),
    );
  }
  return [...byspan.values()].sort((a, b) => a.span - b.span);
}

/** `list_digests`: the lines shown, their text, and whether more spans were left out. */
export interface DigestList {
  entries: DigestEntry[];
  text: string;
  truncated: boolean;
}

/**
 * One digest line per span, newest first, hard-capped at `maxTokens` (estimated at chars / 3.5) and `max`
 * lines, so a model can skim the archive in a few hundred tokens (seed: list_digests).
 */
export async function listDigests(opts: {
  spanDir: string;
  run?: string;
  max?: number;
  maxTokens?: number;
  scope?: ArchiveScope;
}): Promise<DigestList> {
  const max = opts.max ?? 20;
  const maxTokens = opts.maxTokens ?? 400;
  const runs =
    opts.run !== undefined
      ? [await assertRunVisible(opts.spanDir, opts.run, opts.scope)]
      : await scopedRunIds(opts.spanDir, opts.scope);
  const all: DigestEntry[] = [];
  for (const run of runs) {
    for (const { grams: _filter, ...d } of await runDigests(opts.spanDir, run))
      all.push({ ...d, run, line: renderDigest(run, d) });
  }
  all.sort(
    (a, b) => b.created_at.localeCompare(a.created_at) || b.run.localeCompare(a.run) || b.span - a.span,
  );
  const entries: DigestEntry[] = [];
  let tokens = 0;
  for (const entry of all) {
    const cost = estimateTokens(entry.line.length + 1);
    if (entries.length >= max || tokens + cost > maxTokens) break;
    entries.push(entry);
    tokens += cost;
  }
  return { entries, text: entries.map((e) => e.line).join('\n'), truncated: entries.length < all.length };
}

/** One message of a read, verbatim (`raw`) and as text. */
interface ReadMessage {
  index: number;
  role: string;
  text: string;
  raw: unknown;
}

export interface ReadSpanResult {
  run: string;
  span: number;
  kind: string;
  summary: string | null;
  total_messages: number;
  messages: ReadMessage[];
  /** `summary: ...` then `[<i>] <role>: <text>` lines, cut at maxChars. */
  text: string;
  truncated: boolean;
  /** Where the next read should start when the text was cut. */
  next_start: number | null;
  /** The span's log entry and tlog-proof bundle (LocalArchive adds them; issue 29). */
  log_entry?: string | null;
  log_proof?: string | null;
}

/** Opens one span (index 0: the run's capture journal), or its messages start..end, cut at maxChars. */
export async function readSpan(opts: {
  spanDir: string;
  run: string;
  index: number;
  start?: number;
  end?: number;
  maxChars?: number;
  scope?: ArchiveScope;
}): Promise<ReadSpanResult> {
  const run = await assertRunVisible(opts.spanDir, opts.run, opts.scope);
  const index = assertSpanNumber(opts.index);
  const start = assertSpanNumber(opts.start ?? 0);
  const maxChars = opts.maxChars ?? 20000;
  let kind = 'capture';
  let summary: string | null = null;
  let raw: unknown[];
  if (index === 0) {
    raw = (await loadJournal(opts.spanDir, run)).map((l) => l.message);
  } else {
    const stored = await loadSpan(opts.spanDir, run, index);
    kind = stored.kind ?? 'compaction';
    summary = stored.summary ?? null;
    raw = stored.messages;
  }
  const end = Math.min(opts.end === undefined ? raw.length - 1 : assertSpanNumber(opts.end), raw.length - 1);
  let text = summary !== null && start === 0 ? `summary: ${summary}\n` : '';
  const messages: ReadMessage[] = [];
  let nextStart: number | null = null;
  if (text.length >= maxChars) {
    // The summary alone fills the read (a cap set low by an API caller): no message is shown, the next read starts
    // at the first one.
    text = text.slice(0, maxChars);
    nextStart = start <= end ? start : null;
  }
  for (let i = start; nextStart === null && i <= end; i += 1) {
    const view = viewMessage(raw[i]);
    const line = `[${i}] ${view.role}: ${view.text}\n`;
    if (text.length + line.length > maxChars) {
      // The first message alone may exceed the cap: show its start, and the next read starts after it.
      if (messages.length === 0) {
        text += line.slice(0, Math.max(0, maxChars - text.length));
        messages.push({ index: i, role: view.role, text: view.text, raw: raw[i] });
        nextStart = i + 1 <= end ? i + 1 : null;
      } else nextStart = i;
      break;
    }
    text += line;
    messages.push({ index: i, role: view.role, text: view.text, raw: raw[i] });
  }
  return {
    run,
    span: index,
    kind,
    summary,
    total_messages: raw.length,
    messages,
    text,
    truncated: nextStart !== null || text.length >= maxChars,
    next_start: nextStart,
  };
}
