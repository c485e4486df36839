import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { CHAIN_FILE, SPAN_FILE, runDir, spanFileName } from './archive-paths';
import { runIds } from './archive-reader';
import { sha256Hex } from './canonical-json';
import { readChain } from './chain-reader';
import { fsyncDir, fsyncFile, isErrno } from './durable-fs';
import type { SpanLog } from './span-log';
import { folderSource, parseSpanEntry, readEntries } from './span-log-read';

/** A complete span line: its run, its number, the sha256 it seals and the log it names (null: written without one). */
export interface SpanLine {
  run: string;
  span: number;
  sha256: string;
  log: string | null;
}

/** The complete, hash-checked span lines of a run's chain, in order (the chain's own verify names the rest). */
async function runSpanLines(spanDir: string, run: string): Promise<SpanLine[]> {
  const out: SpanLine[] = [];
  for (const l of (await readChain(spanDir, run)).lines) {
    if (!l.ok || l.line.kind !== 'span' || l.line.file === undefined || l.line.sha256 === undefined) continue;
    out.push({
      run,
      span: Number(SPAN_FILE.exec(l.line.file)?.[1]),
      sha256: l.line.sha256,
      log: l.line.log ?? null,
    });
  }
  return out;
}

/** Every run's span lines (or one run's), run by run. */
export async function allSpanLines(spanDir: string, run?: string): Promise<SpanLine[]> {
  const runs = run !== undefined ? [run] : await runIds(spanDir).catch(() => []);
  const out: SpanLine[] = [];
  for (const r of runs) out.push(...(await runSpanLines(spanDir, r)));
  return out;
}

/**
 * The runs a writer made: every run name a SealedArchive gives carries its replica tag as a `-` separated part
 * (docs/ARCHIVE_FORMAT.md §1), so only those chains are read. A run whose name holds the tag by chance is read too and
 * costs nothing: its lines name another log.
 */
async function runsOfReplica(spanDir: string, replica: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fsp.readdir(spanDir);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw err;
  }
  return names.filter((n) => !n.startsWith('.') && n.split('-').includes(replica)).sort();
}

/** `<run> <span>`: how an entry and a span line are matched. */
export function spanKey(run: string, span: number): string {
  return `${run} ${span}`;
}

/** The spans a log has entries for at its newest checkpoint. */
async function loggedSpans(log: SpanLog, dir: string): Promise<Set<string>> {
  const out = new Set<string>();
  for (const text of await readEntries(folderSource(dir), log.size)) {
    const e = parseSpanEntry(text);
    if (e !== null) out.add(spanKey(e.run, e.span));
  }
  return out;
}

/** The entry of a span line when its file is there and whole (the sha256 the line seals), else null. */
async function entryIfWhole(spanDir: string, line: SpanLine): Promise<string | null> {
  const file = path.join(runDir(spanDir, line.run), spanFileName(line.span));
  try {
    if (sha256Hex(await fsp.readFile(file)) !== line.sha256) return null;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return null; // pruned or deleted: --verify names it either way
    throw err;
  }
  return `context-guardian span ${line.run} ${line.span} sha256:${line.sha256}`;
}

/**
 * Logs what a writer that is gone left without entries (issue 29, the crash window between a commit and the
 * checkpoint after it): the span lines of its runs that name log `name` and have no entry in `log`, in chain order,
 * each once its file is found whole, and only after the run is made durable as the commit it may have missed would
 * have made it (the folder's names, then the chain's lines). `named` counts the lines naming the log at all.
 */
export async function logLeftovers(opts: {
  spanDir: string;
  name: string;
  replica: string;
  log: SpanLog;
  dir: string;
}): Promise<{ appended: number; named: number }> {
  const logged = await loggedSpans(opts.log, opts.dir);
  const entries: string[] = [];
  let named = 0;
  for (const run of await runsOfReplica(opts.spanDir, opts.replica)) {
    const lines = (await runSpanLines(opts.spanDir, run)).filter((l) => l.log === opts.name);
    named += lines.length;
    const missing = lines.filter((l) => !logged.has(spanKey(l.run, l.span)));
    if (missing.length === 0) continue;
    await fsyncDir(runDir(opts.spanDir, run));
    await fsyncFile(path.join(runDir(opts.spanDir, run), CHAIN_FILE));
    for (const line of missing) {
      const entry = await entryIfWhole(opts.spanDir, line);
      if (entry !== null) entries.push(entry);
    }
  }
  if (entries.length > 0) await opts.log.append(entries);
  return { appended: entries.length, named };
}
