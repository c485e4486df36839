import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { ArchiveError } from './archive-error';
import {
  INDEX_FILE,
  JOURNAL_FILE,
  OPEN_JOURNAL_FILE,
  QUARANTINE_DIR,
  SPAN_FILE,
  TEMP_FILE,
  assertRunId,
  runDir,
  spanFileName,
} from './archive-paths';
import { runFiles, runIds, spanNumbers } from './archive-reader';
import { sha256Hex } from './canonical-json';
import { appendToChain, type NewChainLine } from './chain-append';
import { readChain } from './chain-reader';
import { buildDigest } from './digest';
import { DIR_MODE, appendDurable, fsyncDir, writeFileDurable } from './durable-fs';
import { parseJsonLine } from './jsonl';
import { recordPrunedRuns } from './log-pins';
import { buildGrams } from './grams';
import { runDigests } from './recall-read';
import { StoredSpanSchema } from './span-record';
import { verifyRun } from './verify';

interface MaintenanceBase {
  spanDir: string;
  anchorDir?: string | null;
  now?: () => Date;
  onProgress?: (done: number, total: number) => void;
}

async function fileLine(dir: string, file: string): Promise<{ sha256: string; size: number }> {
  const bytes = await fsp.readFile(path.join(dir, file));
  return { sha256: sha256Hex(bytes), size: bytes.length };
}

/**
 * Seals runs written before the chain existed: one line per span and closed journal segment, in number
 * order, each marked `backfilled: true` because it was sealed late (seed "Prove it").
 */
export async function sealExisting(
  opts: MaintenanceBase,
): Promise<{ runs: { run: string; lines: number }[] }> {
  const now = opts.now ?? (() => new Date());
  const runs = await runIds(opts.spanDir);
  const out: { run: string; lines: number }[] = [];
  for (const [i, run] of runs.entries()) {
    opts.onProgress?.(i + 1, runs.length);
    if ((await readChain(opts.spanDir, run)).exists) continue;
    const dir = runDir(opts.spanDir, run);
    const files = await runFiles(opts.spanDir, run);
    const lines: NewChainLine[] = [];
    for (const span of spanNumbers(files)) {
      const file = spanFileName(span);
      lines.push({ kind: 'span', file, ...(await fileLine(dir, file)), backfilled: true });
    }
    const journals = files.filter((f) => JOURNAL_FILE.test(f)).sort();
    for (const file of journals)
      lines.push({ kind: 'journal', file, ...(await fileLine(dir, file)), backfilled: true });
    if (lines.length === 0) continue;
    await appendToChain({ spanDir: opts.spanDir, anchorDir: opts.anchorDir ?? null, run, now }, lines);
    out.push({ run, lines: lines.length });
  }
  return { runs: out };
}

/** Removes whole runs with nothing newer than `retentionDays` (GUARDIAN_RETENTION_DAYS; 0 keeps all). */
export async function pruneRuns(opts: {
  spanDir: string;
  retentionDays: number;
  now?: () => Date;
}): Promise<{ removed: string[] }> {
  if (opts.retentionDays <= 0) return { removed: [] };
  const now = (opts.now ?? (() => new Date()))();
  const cutoff = now.getTime() - opts.retentionDays * 86_400_000;
  const removed: string[] = [];
  for (const run of await runIds(opts.spanDir)) {
    const dir = runDir(opts.spanDir, run);
    let newest = (await fsp.stat(dir)).mtimeMs;
    for (const file of await runFiles(opts.spanDir, run))
      newest = Math.max(newest, (await fsp.stat(path.join(dir, file))).mtimeMs);
    if (newest < cutoff) removed.push(run);
  }
  // The record goes first, as for a chain's prune line: the log keeps the runs' entries, and --verify reads them as
  // pruned only when this record names the run (docs/ARCHIVE_FORMAT.md#the-log).
  await recordPrunedRuns(opts.spanDir, removed, now);
  for (const run of removed) await fsp.rm(runDir(opts.spanDir, run), { recursive: true, force: true });
  if (removed.length > 0) await fsyncDir(opts.spanDir);
  return { removed };
}

function parsesAsSpan(text: string): boolean {
  return StoredSpanSchema.safeParse(parseJsonLine(text)).success;
}

function parsesAsJournal(text: string): boolean {
  return (
    text.endsWith('\n') &&
    text
      .slice(0, -1)
      .split('\n')
      .every((l) => parseJsonLine(l) !== undefined)
  );
}

export interface RepairAction {
  action: 'sealed' | 'quarantined' | 'truncated';
  file: string;
  to?: string;
}

/**
 * Closes a tail torn by a crash (ARCHITECTURE.md#files): drops a partial last chain line, seals span and journal files
 * that parse whole, quarantines temp files and files that do not, each with a `repair` record. Refuses a run
 * whose chain is broken anywhere else (ARCHIVE_CHAIN_BROKEN). Never run it on a run whose writer is alive.
 */
export async function repairRun(
  opts: MaintenanceBase & { run: string },
): Promise<{ run: string; actions: RepairAction[] }> {
  const run = assertRunId(opts.run);
  const now = opts.now ?? (() => new Date());
  const verdict = await verifyRun({ spanDir: opts.spanDir, anchorDir: opts.anchorDir ?? null, run });
  if (verdict.break !== null && verdict.break.kind !== 'unsealed-file') {
    throw new ArchiveError(
      'ARCHIVE_CHAIN_BROKEN',
      `run ${run}: ${verdict.break.kind} (${verdict.break.detail}); --repair closes only a torn tail`,
    );
  }
  const dir = runDir(opts.spanDir, run);
  const ctx = { spanDir: opts.spanDir, anchorDir: opts.anchorDir ?? null, run, now };
  const actions: RepairAction[] = [];
  const chain = await readChain(opts.spanDir, run);
  if (chain.tornBytes > 0) {
    await fsp.truncate(path.join(dir, 'chain.jsonl'), chain.completeBytes);
    await appendToChain(ctx, [
      { kind: 'repair', action: 'truncated', file: 'chain.jsonl', bytes: chain.tornBytes },
    ]);
    actions.push({ action: 'truncated', file: 'chain.jsonl' });
  }
  // An open journal segment whose writer is gone is closed under its sealed name first.
  for (const file of await runFiles(opts.spanDir, run)) {
    const open = OPEN_JOURNAL_FILE.exec(file);
    if (open?.[1] !== undefined)
      await fsp.rename(path.join(dir, file), path.join(dir, `journal-${open[1]}.jsonl`));
  }
  for (;;) {
    const unsealed = (await verifyRun({ spanDir: opts.spanDir, run })).break;
    if (unsealed === null) break;
    if (unsealed.kind !== 'unsealed-file' || unsealed.file === null) {
      throw new ArchiveError(
        'ARCHIVE_CHAIN_BROKEN',
        `run ${run}: ${unsealed.kind} after repair (${unsealed.detail})`,
      );
    }
    actions.push(await repairFile(ctx, dir, unsealed.file));
  }
  return { run, actions };
}

async function repairFile(
  ctx: Parameters<typeof appendToChain>[0],
  dir: string,
  file: string,
): Promise<RepairAction> {
  const text = await fsp.readFile(path.join(dir, file), 'utf8');
  const whole = !TEMP_FILE.test(file) && (SPAN_FILE.test(file) ? parsesAsSpan(text) : parsesAsJournal(text));
  const seal = await fileLine(dir, file);
  if (whole) {
    await appendToChain(ctx, [{ kind: 'repair', action: 'sealed', file, ...seal }]);
    if (SPAN_FILE.test(file)) await indexRepairedSpan(dir, file, text);
    return { action: 'sealed', file };
  }
  const to = `${QUARANTINE_DIR}/${file}`;
  await fsp.mkdir(path.join(dir, QUARANTINE_DIR), { recursive: true, mode: DIR_MODE });
  // The record goes first, as for prunes: a crash between the two leaves a named, explainable state.
  await appendToChain(ctx, [{ kind: 'repair', action: 'quarantined', file, to, ...seal }]);
  await fsp.rename(path.join(dir, file), path.join(dir, to));
  await fsyncDir(dir);
  return { action: 'quarantined', file, to };
}

async function indexRepairedSpan(dir: string, file: string, text: string): Promise<void> {
  const stored = StoredSpanSchema.parse(parseJsonLine(text));
  const digest = buildDigest({
    span: Number(file.slice(0, -5)),
    file,
    kind: stored.kind ?? 'compaction',
    created_at: stored.created_at ?? '',
    summary: stored.summary ?? null,
    messages: stored.messages,
    fileText: text,
  });
  await appendDurable(path.join(dir, INDEX_FILE), `${JSON.stringify(digest)}\n`);
}

/** Rebuilds `<run>/index.jsonl` from the span files (older archives, or after a crash lost index lines). */
export async function reindex(opts: {
  spanDir: string;
  run?: string;
  onProgress?: (done: number, total: number) => void;
}): Promise<{ runs: number; spans: number }> {
  const runs = opts.run !== undefined ? [assertRunId(opts.run)] : await runIds(opts.spanDir);
  let spans = 0;
  for (const [i, run] of runs.entries()) {
    const dir = runDir(opts.spanDir, run);
    // Drop the old index first so the digests come from the spans, not from possibly stale lines.
    await fsp.rm(path.join(dir, INDEX_FILE), { force: true });
    const digests = await runDigests(opts.spanDir, run);
    // The search filter is built from each span file's text, as the writer builds it.
    for (const d of digests) {
      const grams = buildGrams(await fsp.readFile(path.join(dir, d.file), 'utf8'));
      if (grams === undefined) delete d.grams;
      else d.grams = grams;
    }
    await writeFileDurable(path.join(dir, INDEX_FILE), digests.map((d) => `${JSON.stringify(d)}\n`).join(''));
    spans += digests.length;
    opts.onProgress?.(i + 1, runs.length);
  }
  return { runs: runs.length, spans };
}
