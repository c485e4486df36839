import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { ArchiveError } from './archive-error';
import {
  JOURNAL_FILE,
  OPEN_JOURNAL_FILE,
  RUN_FILE,
  SPAN_FILE,
  assertRunId,
  runDir,
  spanFileName,
} from './archive-paths';
import { isErrno } from './durable-fs';
import { parseJsonLine, readJsonl } from './jsonl';
import { inScope, type ArchiveScope } from './owners';
import {
  JournalLineSchema,
  RunInfoSchema,
  boundedSessionName,
  StoredSpanSchema,
  type RunFile,
  type StoredSpan,
} from './span-record';

/** A run as the reading side lists it. */
export interface RunSummary {
  run: string;
  session_hash: string | null;
  owner_hash: string | null;
  replica: string | null;
  started_at: string | null;
  spans: number;
  journal_segments: number;
}

/** A span file as listed (numbers from the file name; kind and time from the file). */
export interface SpanListing {
  run: string;
  span: number;
  file: string;
  bytes: number;
}

const RUN_ID = /^[A-Za-z0-9_-]{1,80}$/;

/** Throws ARCHIVE_NOT_FOUND when the span folder does not exist ("no archive": exit 2 in the CLIs). */
export async function runIds(spanDir: string): Promise<string[]> {
  let entries;
  try {
    entries = await fsp.readdir(spanDir, { withFileTypes: true });
  } catch (err) {
    if (isErrno(err, 'ENOENT'))
      throw new ArchiveError('ARCHIVE_NOT_FOUND', 'no archive at the span folder', { cause: err });
    throw err;
  }
  // Newest first: run ids start with a UTC stamp; cc- runs sort after by name, which is stable.
  return entries
    .filter((e) => e.isDirectory() && RUN_ID.test(e.name))
    .map((e) => e.name)
    .sort()
    .reverse();
}

export async function runFiles(spanDir: string, run: string): Promise<string[]> {
  try {
    return await fsp.readdir(runDir(spanDir, run));
  } catch (err) {
    if (isErrno(err, 'ENOENT')) throw new ArchiveError('ARCHIVE_NOT_FOUND', `no run ${run}`, { cause: err });
    throw err;
  }
}

export async function readRunFile(spanDir: string, run: string): Promise<RunFile | null> {
  try {
    const parsed = RunInfoSchema.safeParse(
      parseJsonLine(await fsp.readFile(path.join(runDir(spanDir, run), RUN_FILE), 'utf8')),
    );
    return parsed.success ? parsed.data : null;
  } catch (err) {
    // Runs sealed by --seal-existing from an older archive may have no run.json; they are still listed.
    if (isErrno(err, 'ENOENT')) return null;
    throw err;
  }
}

/**
 * The name a run's session was sent with, from its run.json (ADR 0025, amended), when the run.json names this session
 * and owner; null when it names none (a derived session, an older run, a run pruned away) or another session. Throws
 * ARCHIVE_BAD_ID for a bad run id, and what the volume throws when run.json cannot be read.
 */
export async function runSessionName(
  spanDir: string,
  run: string,
  session: { sessionHash: string; ownerHash: string | null },
): Promise<string | null> {
  const meta = await readRunFile(spanDir, run);
  if (meta?.session_hash !== session.sessionHash || (meta.owner_hash ?? null) !== session.ownerHash)
    return null;
  return boundedSessionName(meta.session_name) ?? null;
}

/** Span numbers of a run, ascending. */
export function spanNumbers(files: string[]): number[] {
  return files
    .map((f) => SPAN_FILE.exec(f)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/** Journal segment file names of a run, in order, closed and open. */
export function journalSegments(files: string[]): string[] {
  const segmentNumber = (f: string): number =>
    Number((JOURNAL_FILE.exec(f) ?? OPEN_JOURNAL_FILE.exec(f))?.[1]);
  return files
    .filter((f) => JOURNAL_FILE.test(f) || OPEN_JOURNAL_FILE.test(f))
    .sort((a, b) => segmentNumber(a) - segmentNumber(b));
}

/**
 * The run ids a scope may see, newest first. Unscoped it is every run; scoped, a run is seen only when its run.json
 * names the owner (a run without one, or unreadable, belongs to nobody and only an unscoped reader sees it).
 */
export async function scopedRunIds(spanDir: string, scope?: ArchiveScope): Promise<string[]> {
  const ids = await runIds(spanDir);
  if (scope?.ownerHash === undefined) return ids;
  const out: string[] = [];
  for (const run of ids) if (inScope(scope, (await readRunFile(spanDir, run))?.owner_hash)) out.push(run);
  return out;
}

/**
 * Throws ARCHIVE_BAD_ID for a bad id and ARCHIVE_NOT_FOUND for a run that is missing or outside the scope: the same
 * answer either way, so a reader cannot learn that another owner's run exists.
 */
export async function assertRunVisible(spanDir: string, run: string, scope?: ArchiveScope): Promise<string> {
  const id = assertRunId(run);
  if (scope?.ownerHash === undefined) return id;
  let meta: RunFile | null;
  try {
    meta = await readRunFile(spanDir, id);
  } catch (err) {
    // A run folder without access (another owner's, a broken volume) is reported like a missing one.
    throw new ArchiveError('ARCHIVE_NOT_FOUND', `no run ${id}`, { cause: err });
  }
  if (!inScope(scope, meta?.owner_hash)) throw new ArchiveError('ARCHIVE_NOT_FOUND', `no run ${id}`);
  return id;
}

/** Every run (or the scope's), newest first; `after` continues a listing after that run id, `limit` bounds it. */
export async function listRuns(opts: {
  spanDir: string;
  scope?: ArchiveScope;
  after?: string;
  limit?: number;
}): Promise<RunSummary[]> {
  const out: RunSummary[] = [];
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  const after = opts.after === undefined ? undefined : assertRunId(opts.after);
  for (const run of await runIds(opts.spanDir)) {
    if (out.length >= limit) break;
    // Newest first is descending by id: a page continues with the ids that sort before the cursor.
    if (after !== undefined && run >= after) continue;
    const meta = await readRunFile(opts.spanDir, run);
    if (!inScope(opts.scope, meta?.owner_hash)) continue;
    const files = await runFiles(opts.spanDir, run);
    out.push({
      run,
      session_hash: meta?.session_hash ?? null,
      owner_hash: meta?.owner_hash ?? null,
      replica: meta?.replica ?? null,
      started_at: meta?.started_at ?? null,
      spans: spanNumbers(files).length,
      journal_segments: journalSegments(files).length,
    });
  }
  return out;
}

/** The span files of one run, ascending; `after` continues after that span number, `limit` bounds the page. */
export async function listSpans(opts: {
  spanDir: string;
  run: string;
  scope?: ArchiveScope;
  after?: number;
  limit?: number;
}): Promise<SpanListing[]> {
  const run = await assertRunVisible(opts.spanDir, opts.run, opts.scope);
  const files = await runFiles(opts.spanDir, run);
  const out: SpanListing[] = [];
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  for (const span of spanNumbers(files)) {
    if (out.length >= limit) break;
    if (opts.after !== undefined && span <= opts.after) continue;
    const file = spanFileName(span);
    const stat = await fsp.stat(path.join(runDir(opts.spanDir, run), file));
    out.push({ run, span, file, bytes: stat.size });
  }
  return out;
}

/** Reads and validates one span file; ARCHIVE_NOT_FOUND when it is missing. */
export async function loadSpan(spanDir: string, run: string, span: number): Promise<StoredSpan> {
  const file = path.join(runDir(spanDir, run), spanFileName(span));
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT'))
      throw new ArchiveError('ARCHIVE_NOT_FOUND', `no span ${run}/${spanFileName(span)}`, { cause: err });
    throw err;
  }
  const parsed = StoredSpanSchema.safeParse(parseJsonLine(text));
  if (!parsed.success) {
    throw new ArchiveError('ARCHIVE_NOT_FOUND', `span ${run}/${spanFileName(span)} is not a span file`);
  }
  return parsed.data;
}

/** Every journal message of a run in order (closed segments, then the open one). */
export async function loadJournal(
  spanDir: string,
  run: string,
): Promise<{ at: string; message: unknown; file: string }[]> {
  const out: { at: string; message: unknown; file: string }[] = [];
  for (const file of journalSegments(await runFiles(spanDir, run))) {
    const { rows } = await readJsonl(path.join(runDir(spanDir, run), file), JournalLineSchema);
    for (const row of rows) out.push({ at: row.at, message: row.message, file });
  }
  return out;
}
