import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';

import { canonicalJson, sha256Hex } from './canonical-json';
import { appendDurable, ensureDir, isErrno, writeFileDurable } from './durable-fs';
import { parseJsonLine } from './jsonl';
import { logsRoot } from './span-log-read';

/**
 * What `--verify` keeps of a log it verified (docs/ARCHIVE_FORMAT.md#the-log): the verifier key it pinned on first
 * sight and the newest checkpoint it found consistent, verbatim, so Go's `tlog.CheckTree` can start from it too.
 */
const PinSchema = z.object({
  origin: z.string(),
  vkey: z.string(),
  checkpoint: z.string(),
  verified_at: z.string(),
});

export type LogPin = z.infer<typeof PinSchema>;

/** `<verified dir>/<origin, unsafe characters as _>-<8 hex of sha256(origin)>.json`: one file per log origin. */
function pinFile(verifiedDir: string, origin: string): string {
  const readable = origin.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 80);
  return path.join(verifiedDir, `${readable}-${sha256Hex(origin).slice(0, 8)}.json`);
}

/** The pin of a log origin, or null when it was never verified here (or the file is not a pin). */
export async function readPin(verifiedDir: string, origin: string): Promise<LogPin | null> {
  let text: string;
  try {
    text = await fsp.readFile(pinFile(verifiedDir, origin), 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return null;
    throw err;
  }
  const parsed = PinSchema.safeParse(parseJsonLine(text.trim()));
  return parsed.success && parsed.data.origin === origin ? parsed.data : null;
}

/** Every pin kept in `verifiedDir` (files that are not pins are passed over). */
export async function listPins(verifiedDir: string): Promise<LogPin[]> {
  let names: string[];
  try {
    names = await fsp.readdir(verifiedDir);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw err;
  }
  const out: LogPin[] = [];
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    const parsed = PinSchema.safeParse(
      parseJsonLine((await fsp.readFile(path.join(verifiedDir, name), 'utf8')).trim()),
    );
    if (parsed.success) out.push(parsed.data);
  }
  return out;
}

/** Replaces the pin of `pin.origin` (atomically: a verify killed mid-write keeps the older pin). */
export async function writePin(verifiedDir: string, pin: LogPin): Promise<void> {
  await ensureDir(verifiedDir);
  await writeFileDurable(pinFile(verifiedDir, pin.origin), `${JSON.stringify(pin, null, 2)}\n`);
}

/** `<span dir>/.tlog/pruned.jsonl`: the runs `--prune` removed, one `{"at","run"}` line each, written first. */
const PRUNED_FILE = 'pruned.jsonl';

/** Records that `--prune` is about to remove `runs`, so --verify reads their entries as pruned, not deleted. */
export async function recordPrunedRuns(spanDir: string, runs: readonly string[], at: Date): Promise<void> {
  if (runs.length === 0) return;
  await ensureDir(logsRoot(spanDir));
  const lines = runs.map((run) => `${canonicalJson({ at: at.toISOString(), run })}\n`).join('');
  await appendDurable(path.join(logsRoot(spanDir), PRUNED_FILE), lines);
}

/** The runs `--prune` removed (a torn last line is ignored, as every reader of a JSON-lines file does). */
export async function prunedRuns(spanDir: string): Promise<Set<string>> {
  let text: string;
  try {
    text = await fsp.readFile(path.join(logsRoot(spanDir), PRUNED_FILE), 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return new Set();
    throw err;
  }
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const parsed = z.object({ run: z.string() }).safeParse(parseJsonLine(line));
    if (parsed.success) out.add(parsed.data.run);
  }
  return out;
}
