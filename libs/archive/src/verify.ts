import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { checkAnchor } from './anchor-check';
import { ArchiveError } from './archive-error';
import { JOURNAL_FILE, SPAN_FILE, TEMP_FILE, assertRunId, runDir } from './archive-paths';
import { assertRunVisible, runFiles, scopedRunIds } from './archive-reader';
import type { ChainBreak } from './chain-break';
import type { ChainLine } from './chain-line';
import { headOf, readChain, type ChainHead, type ReadChain } from './chain-reader';
import { isErrno } from './durable-fs';
import type { ArchiveScope } from './owners';

export interface RunVerdict {
  run: string;
  status: 'ok' | 'pruned-ok' | 'break';
  lines: number;
  head: string | null;
  /** Span files removed under a prune record. */
  pruned: number;
  /** Whether an anchor file was found and checked. */
  anchored: boolean;
  /** Bytes of files hashed. */
  bytes: number;
  break: ChainBreak | null;
}

export interface VerifyOptions {
  spanDir: string;
  anchorDir?: string | null;
  run?: string;
  onProgress?: (done: number, total: number) => void;
  /** Stops the verify between runs and between lines with ARCHIVE_ABORTED (a shutdown must not wait for it). */
  signal?: AbortSignal;
  /** Only the runs this scope may see (team mode). */
  scope?: ArchiveScope;
  /** A page of runs: those after this run id (newest first), at most `limit`. */
  after?: string;
  limit?: number;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw new ArchiveError('ARCHIVE_ABORTED', 'verify stopped before it ended');
}

async function hashFile(file: string): Promise<{ sha256: string; size: number } | null> {
  try {
    const bytes = await fsp.readFile(file);
    return { sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return null;
    throw err;
  }
}

/** The file a line vouches for: quarantined files are checked where they were moved. */
function sealedTarget(line: ChainLine): string | null {
  if (line.kind === 'span' || line.kind === 'journal') return line.file ?? null;
  if (line.kind === 'repair' && line.action === 'sealed') return line.file ?? null;
  if (line.kind === 'repair' && line.action === 'quarantined') return line.to ?? null;
  return null;
}

class RunCheck {
  pruned = 0;
  bytes = 0;
  constructor(
    private readonly dir: string,
    private readonly chain: ReadChain,
    private readonly signal: AbortSignal | undefined,
  ) {}

  /** Walks the lines in order; the first problem found is the break. */
  async walk(): Promise<ChainBreak | null> {
    const prunedFiles = new Set<string>();
    for (const entry of this.chain.lines)
      if (entry.ok && entry.line.kind === 'prune') for (const f of entry.line.files ?? []) prunedFiles.add(f);
    const seenSeq = new Set<number>();
    const seenPrev = new Set<string>();
    let prev = '0'.repeat(64);
    for (const entry of this.chain.lines) {
      throwIfAborted(this.signal);
      if (!entry.ok)
        return {
          kind: 'entry-edited',
          seq: entry.position,
          file: null,
          detail: `chain line ${entry.position}: ${entry.reason}`,
        };
      const line = entry.line;
      if (seenSeq.has(line.seq) || seenPrev.has(line.prev)) {
        return {
          kind: 'chain-forked',
          seq: line.seq,
          file: null,
          detail: `two lines claim seq ${line.seq} or the same predecessor`,
        };
      }
      if (line.seq !== entry.position) {
        return {
          kind: 'entry-reordered',
          seq: line.seq,
          file: null,
          detail: `line ${entry.position} carries seq ${line.seq}`,
        };
      }
      if (line.prev !== prev) {
        return {
          kind: 'entry-edited',
          seq: line.seq - 1,
          file: null,
          detail: `line ${line.seq} does not chain to line ${line.seq - 1} as it stands: that line was rewritten`,
        };
      }
      seenSeq.add(line.seq);
      seenPrev.add(line.prev);
      prev = line.hash;
      const broken = await this.checkFile(line, prunedFiles);
      if (broken !== null) return broken;
    }
    return null;
  }

  private async checkFile(line: ChainLine, prunedFiles: Set<string>): Promise<ChainBreak | null> {
    const target = sealedTarget(line);
    if (target === null) return null;
    const found = await hashFile(path.join(this.dir, target));
    if (found === null) {
      if (line.kind === 'span' && prunedFiles.has(target)) {
        this.pruned += 1;
        return null;
      }
      return {
        kind: 'file-missing',
        seq: line.seq,
        file: target,
        detail: `${target} is gone and no prune record names it`,
      };
    }
    this.bytes += found.size;
    if (found.sha256 !== line.sha256) {
      return {
        kind: 'content-changed',
        seq: line.seq,
        file: target,
        detail: `${target} no longer matches the sha256 sealed at seq ${line.seq}`,
      };
    }
    return null;
  }

  /** Span and journal files (and temp files) no chain line vouches for. */
  unsealed(files: string[]): ChainBreak | null {
    const sealed = new Set<string>();
    for (const entry of this.chain.lines) {
      if (entry.ok) {
        const target = sealedTarget(entry.line);
        if (target !== null) sealed.add(target);
      }
    }
    for (const file of [...files].sort()) {
      if (TEMP_FILE.test(file)) {
        return {
          kind: 'unsealed-file',
          seq: null,
          file,
          detail: `${file} is a temp file left by an interrupted write; --repair quarantines it`,
        };
      }
      if ((SPAN_FILE.test(file) || JOURNAL_FILE.test(file)) && !sealed.has(file)) {
        return {
          kind: 'unsealed-file',
          seq: null,
          file,
          detail: `${file} has no chain line; --repair seals or quarantines it`,
        };
      }
    }
    return null;
  }
}

/** Verifies one run: chain lines, sealed files, anchor, torn tail, unsealed files, in that order. */
export async function verifyRun(opts: {
  spanDir: string;
  anchorDir?: string | null;
  run: string;
  signal?: AbortSignal;
}): Promise<RunVerdict> {
  const run = assertRunId(opts.run);
  const dir = runDir(opts.spanDir, run);
  const files = await runFiles(opts.spanDir, run);
  const chain = await readChain(opts.spanDir, run);
  const check = new RunCheck(dir, chain, opts.signal);
  let broken = await check.walk();
  let anchored = false;
  if (broken === null && opts.anchorDir !== undefined && opts.anchorDir !== null) {
    const anchor = await checkAnchor(opts.anchorDir, run, chain);
    anchored = anchor.anchored;
    broken = anchor.broken;
  }
  if (broken === null && chain.tornBytes > 0) {
    broken = {
      kind: 'unsealed-file',
      seq: chain.lines.length + 1,
      file: 'chain.jsonl',
      detail: 'chain.jsonl ends in a partial line (a crash mid-write); --repair closes it',
    };
  }
  broken ??= check.unsealed(files);
  if (broken === null && !chain.exists && files.some((f) => SPAN_FILE.test(f))) {
    broken = {
      kind: 'unsealed-file',
      seq: null,
      file: null,
      detail: 'the run has no chain.jsonl; --seal-existing seals it',
    };
  }
  const head = headOf(run, chain);
  return {
    run,
    status: broken !== null ? 'break' : check.pruned > 0 ? 'pruned-ok' : 'ok',
    lines: chain.lines.length,
    head: head?.head ?? null,
    pruned: check.pruned,
    anchored,
    bytes: check.bytes,
    break: broken,
  };
}

/**
 * Verifies every run (or one, or a page of `limit` runs after `after`); `ok` only when every checked run is OK or
 * pruned-ok. `next` is the cursor of the following page, null when no run is left.
 */
export async function verifyArchive(
  opts: VerifyOptions,
): Promise<{ ok: boolean; runs: RunVerdict[]; next: string | null }> {
  const after = opts.after === undefined ? undefined : assertRunId(opts.after);
  let runs =
    opts.run !== undefined
      ? [await assertRunVisible(opts.spanDir, opts.run, opts.scope)]
      : (await scopedRunIds(opts.spanDir, opts.scope)).filter((run) => after === undefined || run < after);
  let next: string | null = null;
  if (opts.limit !== undefined && runs.length > opts.limit) {
    runs = runs.slice(0, opts.limit);
    next = runs[runs.length - 1] ?? null;
  }
  const out: RunVerdict[] = [];
  for (const run of runs) {
    throwIfAborted(opts.signal);
    out.push(
      await verifyRun({ spanDir: opts.spanDir, anchorDir: opts.anchorDir ?? null, run, signal: opts.signal }),
    );
    opts.onProgress?.(out.length, runs.length);
  }
  return { ok: out.every((v) => v.status !== 'break'), runs: out, next };
}

/** Each run's chain head (its last readable line), newest run first. */
export async function chainHeads(opts: { spanDir: string; scope?: ArchiveScope }): Promise<ChainHead[]> {
  const out: ChainHead[] = [];
  for (const run of await scopedRunIds(opts.spanDir, opts.scope)) {
    const head = headOf(run, await readChain(opts.spanDir, run));
    if (head !== null) out.push(head);
  }
  return out;
}
