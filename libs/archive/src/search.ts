import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { ArchiveError } from './archive-error';
import { INDEX_FILE, runDir, spanFileName } from './archive-paths';
import {
  assertRunVisible,
  journalSegments,
  readRunFile,
  runFiles,
  scopedRunIds,
  spanNumbers,
} from './archive-reader';
import { mayHoldAny } from './grams';
import { sha256Hex } from './canonical-json';
import { parseJsonLine } from './jsonl';
import { viewMessage } from './message-text';
import { sessionHash, type ArchiveScope } from './owners';
import { JournalLineSchema, StoredSpanSchema } from './span-record';

/** One search hit. `span` 0 is the run's capture journal, where `message_index` counts journal lines. */
interface SearchHit {
  run: string;
  span: number;
  /** `<run>/<NNNN>.json`, or `<run>/journal` for the capture journal. */
  ref: string;
  message_index: number;
  role: string;
  snippet: string;
  phrase_match: boolean;
  words_matched: number;
  created_at: string;
  /** The span's log entry and tlog-proof bundle (LocalArchive adds them; issue 29). */
  log_entry?: string | null;
  log_proof?: string | null;
}

export interface SearchOptions {
  spanDir: string;
  term: string;
  run?: string;
  /** A session hash (or its prefix), or the raw session value, which is hashed the way the sidecar hashed it. */
  session?: string;
  /** Team mode: the owner whose raw session value `session` names (the sidecar keys it `<owner>/<value>`). */
  sessionOwner?: string;
  max?: number;
  scope?: ArchiveScope;
  /** Stops the search between files when aborted; what was found so far is answered with `complete: false`. */
  signal?: AbortSignal;
}

/** What a search found: the best `max` hits, how many there were in all, and whether every run was read. */
export interface SearchResult {
  hits: SearchHit[];
  total: number;
  complete: boolean;
}

const SNIPPET_BEFORE = 60;
const SNIPPET_AFTER = 140;
const READ_BATCH = 16;

function words(term: string): string[] {
  return [...new Set(term.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [])];
}

function snippet(text: string, at: number): string {
  const from = Math.max(0, at - SNIPPET_BEFORE);
  const to = Math.min(text.length, at + SNIPPET_AFTER);
  const body = text.slice(from, to).replace(/\s+/g, ' ').trim();
  return `${from > 0 ? '...' : ''}${body}${to < text.length ? '...' : ''}`;
}

interface Matcher {
  phrase: string;
  words: string[];
}

function matchMessage(
  m: Matcher,
  message: unknown,
): Omit<SearchHit, 'run' | 'span' | 'ref' | 'message_index' | 'created_at'> | null {
  const view = viewMessage(message);
  const lower = view.text.toLowerCase();
  const phraseAt = lower.indexOf(m.phrase);
  const found = m.words.filter((w) => lower.includes(w));
  if (phraseAt < 0 && found.length === 0) return null;
  const at = phraseAt >= 0 ? phraseAt : lower.indexOf(found[0] ?? '');
  return {
    role: view.role,
    snippet: snippet(view.text, at),
    phrase_match: phraseAt >= 0,
    words_matched: phraseAt >= 0 ? m.words.length : found.length,
  };
}

async function sessionMatches(spanDir: string, run: string, opts: SearchOptions): Promise<boolean> {
  const session = opts.session ?? '';
  const meta = await readRunFile(spanDir, run);
  const hash = meta?.session_hash;
  if (hash === undefined) return false;
  const wanted = session.toLowerCase();
  // A hash prefix; the raw value as the sidecar hashes it; or as a Claude Code capture hashes its session id.
  return (
    hash.startsWith(wanted) || hash === sessionHash(session, opts.sessionOwner) || hash === sha256Hex(session)
  );
}

/** Reads files in small parallel batches; the prefilter drops files holding none of the words unparsed. */
async function readMatching(
  dir: string,
  files: string[],
  m: Matcher,
  signal: AbortSignal | undefined,
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let i = 0; i < files.length; i += READ_BATCH) {
    if (signal?.aborted === true) break;
    const batch = files.slice(i, i + READ_BATCH);
    const texts = await Promise.all(batch.map((f) => fsp.readFile(path.join(dir, f), 'utf8')));
    texts.forEach((text, j) => {
      const file = batch[j];
      // Words hold only letters, digits and `_`, which JSON never escapes, so a raw-text miss is a real miss.
      if (file === undefined) return;
      const lower = text.toLowerCase();
      if (m.words.some((w) => lower.includes(w))) out.set(file, text);
    });
  }
  return out;
}

/**
 * The search filter of each span the run's index has one for (index.jsonl `grams`). The index is derived and not
 * sealed: a span without a line, or with a line that does not parse, is simply read.
 */
async function spanFilters(dir: string, files: readonly string[]): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  if (!files.includes(INDEX_FILE)) return out;
  const text = await fsp.readFile(path.join(dir, INDEX_FILE), 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    if (!line.includes('"grams"')) continue;
    const row = parseJsonLine(line) as { file?: unknown; grams?: unknown } | undefined;
    if (typeof row?.file === 'string' && typeof row.grams === 'string')
      out.set(row.file, Buffer.from(row.grams, 'base64'));
  }
  return out;
}

async function searchRun(
  spanDir: string,
  run: string,
  m: Matcher,
  hits: SearchHit[],
  signal: AbortSignal | undefined,
): Promise<void> {
  const dir = runDir(spanDir, run);
  const files = await runFiles(spanDir, run);
  const filters = await spanFilters(dir, files);
  // A span whose filter rules out every word is not read at all (grams.ts).
  const spanFiles = spanNumbers(files)
    .map(spanFileName)
    .filter((f) => {
      const filter = filters.get(f);
      return filter === undefined || mayHoldAny(filter, m.words);
    });
  const matching = await readMatching(dir, [...spanFiles, ...journalSegments(files)], m, signal);
  // Stopped part-way: this run's hits would be a random subset of its files, so none are counted.
  if (signal?.aborted === true) return;
  let journalIndex = 0;
  for (const file of journalSegments(files)) {
    const text = matching.get(file);
    if (text === undefined) {
      // Journal message indexes run across segments, so a skipped segment still advances the count.
      journalIndex += (await fsp.readFile(path.join(dir, file), 'utf8'))
        .split('\n')
        .filter((l) => l !== '').length;
      continue;
    }
    for (const raw of text.split('\n')) {
      if (raw === '') continue;
      const line = JournalLineSchema.safeParse(parseJsonLine(raw));
      if (!line.success) continue;
      const hit = matchMessage(m, line.data.message);
      if (hit !== null) {
        hits.push({
          ...hit,
          run,
          span: 0,
          ref: `${run}/journal`,
          message_index: journalIndex,
          created_at: line.data.at,
        });
      }
      journalIndex += 1;
    }
  }
  for (const file of spanFiles) {
    const text = matching.get(file);
    if (text === undefined) continue;
    const stored = StoredSpanSchema.safeParse(parseJsonLine(text));
    if (!stored.success) continue;
    const span = Number(file.slice(0, -'.json'.length));
    stored.data.messages.forEach((message, index) => {
      const hit = matchMessage(m, message);
      if (hit !== null) {
        hits.push({
          ...hit,
          run,
          span,
          ref: `${run}/${file}`,
          message_index: index,
          created_at: stored.data.created_at ?? '',
        });
      }
    });
  }
}

/**
 * Searches spans and capture journals: whole phrase first, then most words matched, then newest (seed:
 * search_spans). Matching is case-insensitive on the messages' text.
 */
export async function searchArchive(opts: SearchOptions): Promise<SearchResult> {
  const phrase = opts.term.toLowerCase().replace(/\s+/g, ' ').trim();
  const m: Matcher = { phrase, words: words(opts.term) };
  if (m.words.length === 0) throw new ArchiveError('ARCHIVE_BAD_OPTION', 'search term has no words');
  const runs =
    opts.run !== undefined
      ? [await assertRunVisible(opts.spanDir, opts.run, opts.scope)]
      : await scopedRunIds(opts.spanDir, opts.scope);
  const hits: SearchHit[] = [];
  for (const run of runs) {
    if (opts.signal?.aborted === true) break;
    if (opts.session !== undefined && !(await sessionMatches(opts.spanDir, run, opts))) continue;
    await searchRun(opts.spanDir, run, m, hits, opts.signal);
  }
  hits.sort(
    (a, b) =>
      Number(b.phrase_match) - Number(a.phrase_match) ||
      b.words_matched - a.words_matched ||
      b.created_at.localeCompare(a.created_at) ||
      b.run.localeCompare(a.run) ||
      b.span - a.span ||
      a.message_index - b.message_index,
  );
  return { hits: hits.slice(0, opts.max ?? 50), total: hits.length, complete: opts.signal?.aborted !== true };
}
