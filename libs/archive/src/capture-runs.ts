import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';

import { RUN_FILE, runDir, spanFileName } from './archive-paths';
import { listSpans } from './archive-reader';
import { isErrno } from './durable-fs';
import { parseJsonLine } from './jsonl';

/**
 * Claude Code capture runs (docs/ARCHIVE_FORMAT.md "Capture spans"): which runs hold a captured session, and how far
 * into its transcript they reach. The hook reads them on a laptop and the sidecar reads them when a hook posts to it
 * (team mode), so both resume a capture at the same byte.
 */

/** `route` of every capture span: how readers tell a Claude Code transcript span from a proxy span. */
export const CAPTURE_ROUTE = 'claude-code';

const RunJsonSchema = z.looseObject({ session_hash: z.string(), owner_hash: z.string().nullish() });
const CaptureSpanSchema = z.looseObject({
  kind: z.string(),
  route: z.string(),
  first_index: z.number(),
  messages: z.array(z.unknown()),
});

/** Bytes one archived transcript line took in the transcript, newline included. */
export function archivedLineBytes(message: unknown): number {
  const text = typeof message === 'string' ? message : JSON.stringify(message);
  return Buffer.byteLength(text ?? '', 'utf8') + 1;
}

/**
 * The session's runs in the span folder, found by name first (`cc-<hash 12>-`, `-<hash 8>-`, or one the caller
 * already knows) and confirmed by run.json; with `ownerHash` given (null: no owner) its owner must match too.
 */
export async function captureRuns(
  spanDir: string,
  sessionHash: string,
  opts: { known?: string[]; ownerHash?: string | null } = {},
): Promise<string[]> {
  let names: string[];
  try {
    names = await fsp.readdir(spanDir);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw err;
  }
  const known = opts.known ?? [];
  const candidates = names.filter(
    (n) =>
      n.startsWith(`cc-${sessionHash.slice(0, 12)}-`) ||
      n.includes(`-${sessionHash.slice(0, 8)}-`) ||
      known.includes(n),
  );
  const out: string[] = [];
  for (const run of candidates) {
    try {
      const meta = RunJsonSchema.safeParse(
        parseJsonLine(await fsp.readFile(path.join(spanDir, run, RUN_FILE), 'utf8')),
      );
      if (!meta.success || meta.data.session_hash !== sessionHash) continue;
      if (opts.ownerHash !== undefined && (meta.data.owner_hash ?? null) !== opts.ownerHash) continue;
      out.push(run);
    } catch (err) {
      // A run without a readable run.json was not written by a capture; skipping it cannot lose data.
      if (!isErrno(err, 'ENOENT') && !isErrno(err, 'ENOTDIR')) throw err;
    }
  }
  return out.sort();
}

/** Transcript bytes a capture span covers: [first_index, end). Null for spans that are not captures. */
async function captureSpanRange(
  spanDir: string,
  run: string,
  span: number,
): Promise<{ start: number; end: number } | null> {
  const text = await fsp.readFile(path.join(runDir(spanDir, run), spanFileName(span)), 'utf8');
  const parsed = CaptureSpanSchema.safeParse(parseJsonLine(text));
  if (!parsed.success || parsed.data.kind !== 'capture' || parsed.data.route !== CAPTURE_ROUTE) return null;
  const bytes = parsed.data.messages.reduce<number>((sum, m) => sum + archivedLineBytes(m), 0);
  return { start: parsed.data.first_index, end: parsed.data.first_index + bytes };
}

/**
 * The archived transcript offset as the spans themselves show it (seed: "recovered from the spans themselves if a
 * capture is cut off"): each run's newest span ends where the next capture must start.
 */
export async function captureEnd(spanDir: string, runs: string[]): Promise<number> {
  let offset = 0;
  for (const run of runs) {
    const spans = await listSpans({ spanDir, run });
    const last = spans[spans.length - 1];
    if (last === undefined) continue;
    const range = await captureSpanRange(spanDir, run, last.span);
    if (range !== null) offset = Math.max(offset, range.end);
  }
  return offset;
}
