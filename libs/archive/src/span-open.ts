import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { ArchiveError } from './archive-error';
import { runDir, spanFileName } from './archive-paths';
import { assertRunVisible } from './archive-reader';
import { sha256Hex } from './canonical-json';
import { isErrno } from './durable-fs';
import { parseJsonLine } from './jsonl';
import type { ArchiveScope } from './owners';
import { StoredSpanSchema } from './span-record';

/** A span ref as summaries and handles name it: `<run>/<NNNN>.json` (docs/ARCHIVE_FORMAT.md §1). */
const SPAN_REF = /^([A-Za-z0-9_-]{1,80})\/(\d{4,})\.json$/;

/** One span file's content, as a summary is rebuilt from it. */
export interface OpenedSpan {
  run: string;
  span: number;
  /** `chat`, `messages` or `responses`; null when the file does not say (older spans). */
  route: string | null;
  summary: string | null;
  /** The archived messages, verbatim as the client sent them. */
  messages: unknown[];
}

/** The run and number a span ref names; null for anything else. */
export function parseSpanRef(ref: string): { run: string; span: number } | null {
  const m = SPAN_REF.exec(ref);
  if (m === null) return null;
  const span = Number(m[2]);
  // One name per span: `00001.json` is not how span 1 is named, so it names none.
  return spanFileName(span) === `${m[2]}.json` ? { run: m[1]!, span } : null;
}

/**
 * Opens the span a ref names, in the scope's runs only (another owner's run reads as missing). With `sha256` (a log
 * entry's, or a handle's copy of it) the file's bytes must hash to it: a span edited since it was logged is refused
 * (ARCHIVE_CHAIN_BROKEN), never read. ARCHIVE_NOT_FOUND: no such span (pruned, never written, out of scope).
 */
export async function openSpan(opts: {
  spanDir: string;
  ref: string;
  scope?: ArchiveScope;
  sha256?: string;
}): Promise<OpenedSpan> {
  const named = parseSpanRef(opts.ref);
  if (named === null) throw new ArchiveError('ARCHIVE_BAD_ID', 'not a span ref (<run>/<NNNN>.json)');
  const run = await assertRunVisible(opts.spanDir, named.run, opts.scope);
  const file = path.join(runDir(opts.spanDir, run), spanFileName(named.span));
  let bytes: Buffer;
  try {
    bytes = await fsp.readFile(file);
  } catch (err) {
    if (isErrno(err, 'ENOENT'))
      throw new ArchiveError('ARCHIVE_NOT_FOUND', `no span ${opts.ref}`, { cause: err });
    throw err;
  }
  if (opts.sha256 !== undefined && sha256Hex(bytes) !== opts.sha256)
    throw new ArchiveError('ARCHIVE_CHAIN_BROKEN', `span ${opts.ref} does not match its log entry`);
  const parsed = StoredSpanSchema.safeParse(parseJsonLine(bytes.toString('utf8')));
  if (!parsed.success) throw new ArchiveError('ARCHIVE_NOT_FOUND', `span ${opts.ref} is not a span file`);
  const route = (parsed.data as { route?: unknown }).route;
  return {
    run,
    span: named.span,
    route: typeof route === 'string' ? route : null,
    summary: parsed.data.summary ?? null,
    messages: parsed.data.messages,
  };
}
