import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { SPAN_FILE, runDir, spanFileName } from './archive-paths';
import { sha256Hex } from './canonical-json';
import { readChain } from './chain-reader';
import { isErrno } from './durable-fs';
import {
  Broken,
  checkConsistent,
  checkTree,
  fail,
  openLog,
  peekOrigin,
  type LogBreak,
} from './log-tree-check';
import { prunedRuns, readPin, writePin, type LogPin } from './log-pins';
import { CHECKPOINT_FILE, VKEY_FILE } from './span-log';
import { folderSource, listLogs, logFolder, parseSpanEntry, type LogSource } from './span-log-read';

export interface LogVerdict {
  log: string;
  origin: string | null;
  /** The checkpoint's tree size (entries checked). */
  size: number;
  status: 'ok' | 'pruned-ok' | 'break';
  /**
   * How far the check went: `spans` (on the volume: tree, tiles and every span file), `entries` (through a sidecar
   * as the admin: tree, tiles and entries; the span files are the sidecar's seal to check) or `hashes` (through a
   * sidecar as a developer, who is not served the entries: the tree from its hash tiles).
   */
  checked: 'spans' | 'entries' | 'hashes';
  /** Entries whose span file was removed under a prune record (GUARDIAN_KEEP_SPANS) or a pruned run (--prune). */
  pruned: number;
  /** The size of the last verified checkpoint this one was found consistent with; null the first time. */
  since: number | null;
  /** Whether this checkpoint is now the pin in the verified folder (not with `run`, a break, or a folder not writable). */
  pinned: boolean;
  break: LogBreak | null;
}

/** Per-run facts an entry check needs: the run's folder is there, and which span files a prune line names. */
class RunFacts {
  private readonly runs = new Map<string, Promise<{ exists: boolean; pruned: Set<string> }>>();
  constructor(
    private readonly spanDir: string,
    private readonly removed: Set<string>,
  ) {}

  wasPrunedRun(run: string): boolean {
    return this.removed.has(run);
  }

  of(run: string): Promise<{ exists: boolean; pruned: Set<string> }> {
    let facts = this.runs.get(run);
    if (facts === undefined) {
      facts = this.read(run);
      this.runs.set(run, facts);
    }
    return facts;
  }

  private async read(run: string): Promise<{ exists: boolean; pruned: Set<string> }> {
    const chain = await readChain(this.spanDir, run);
    const pruned = new Set<string>();
    for (const l of chain.lines)
      if (l.ok && l.line.kind === 'prune') for (const f of l.line.files ?? []) pruned.add(f);
    let exists = chain.exists;
    if (!exists)
      exists = await fsp.stat(runDir(this.spanDir, run)).then(
        () => true,
        () => false,
      );
    return { exists, pruned };
  }
}

async function readSpanFile(file: string): Promise<Buffer | null> {
  try {
    return await fsp.readFile(file);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return null;
    throw err;
  }
}

/** Each entry against its span file; then no span file below a run's newest entry may lack one. */
async function checkSpans(
  spanDir: string,
  entries: readonly string[],
  facts: RunFacts,
  onlyRun: string | undefined,
): Promise<number> {
  let pruned = 0;
  const logged = new Map<string, Set<number>>();
  for (const [i, text] of entries.entries()) {
    const e = parseSpanEntry(text);
    if (e === null) fail('log-rewritten', `entry ${i} is not a span entry`, i);
    if (onlyRun !== undefined && e.run !== onlyRun) continue;
    if (!logged.has(e.run)) logged.set(e.run, new Set());
    logged.get(e.run)!.add(e.span);
    const run = await facts.of(e.run);
    const file = spanFileName(e.span);
    const bytes = run.exists ? await readSpanFile(path.join(runDir(spanDir, e.run), file)) : null;
    if (bytes === null) {
      if (run.exists ? run.pruned.has(file) : facts.wasPrunedRun(e.run)) {
        pruned += 1;
        continue;
      }
      fail('span-missing', `${e.run}/${file} is gone and no prune record names it`, i);
    }
    if (sha256Hex(bytes) !== e.sha256)
      fail('span-changed', `${e.run}/${file} no longer matches its entry's sha256`, i);
  }
  for (const [run, spans] of logged) {
    if (!(await facts.of(run)).exists) continue;
    const newest = Math.max(...spans);
    for (const name of (await fsp.readdir(runDir(spanDir, run))).sort()) {
      const n = Number(SPAN_FILE.exec(name)?.[1] ?? Number.NaN);
      // Entries follow commits in placement order, so only a span newer than the run's newest entry may wait for one.
      if (n < newest && !spans.has(n))
        fail('span-unlogged', `${run}/${name} is older than the run's newest entry and has none`);
    }
  }
  return pruned;
}

/** Where verified checkpoints are kept, and how the caller hears that one could not be. */
export interface PinOptions {
  verifiedDir: string | null;
  now?: () => Date;
  /** Told when a checkpoint that checked out could not be kept in `verifiedDir`. */
  onPinError?: (cause: unknown) => void;
}

/**
 * One log checked against its pin: key, signature, tree and tiles, consistency, then `more` (the span files, where
 * the verifier has them). A log that checks out becomes the new pin unless `keepPin`; a broken one leaves it.
 */
export async function verifyOneLog(
  src: LogSource,
  opts: PinOptions & {
    checked: LogVerdict['checked'];
    keepPin?: boolean;
    more?: (entries: string[] | null) => Promise<number>;
  },
): Promise<LogVerdict | null> {
  const vkey = await src.read(VKEY_FILE);
  // A log without a key was never opened by a writer (its first commit had not come): nothing to check.
  if (vkey === null && (await src.read(CHECKPOINT_FILE)) === null) return null;
  const origin = peekOrigin(vkey);
  const pin: LogPin | null =
    opts.verifiedDir === null || origin === null ? null : await readPin(opts.verifiedDir, origin);
  const verdict: LogVerdict = {
    log: src.name,
    origin,
    size: 0,
    status: 'ok',
    checked: opts.checked,
    pruned: 0,
    since: null,
    pinned: false,
    break: null,
  };
  try {
    const { note, c, vkey: key } = await openLog(src, pin);
    verdict.size = c.size;
    const { entries, leaves } = await checkTree(src, c, { entries: opts.checked !== 'hashes' });
    verdict.since = checkConsistent(pin, c, leaves);
    verdict.pruned = (await opts.more?.(entries)) ?? 0;
    if (verdict.pruned > 0) verdict.status = 'pruned-ok';
    if (opts.verifiedDir !== null && opts.keepPin !== true) {
      const at = (opts.now ?? (() => new Date()))().toISOString();
      const next = { origin: c.origin, vkey: key, checkpoint: note, verified_at: at };
      // A folder that cannot be written changes no verdict: the log checked out; the CLI says it was not kept.
      verdict.pinned = await writePin(opts.verifiedDir, next).then(
        () => true,
        (cause: unknown) => (opts.onPinError?.(cause), false),
      );
    }
  } catch (err) {
    if (!(err instanceof Broken)) throw err;
    verdict.status = 'break';
    verdict.break = err.brk;
  }
  return verdict;
}

/**
 * Verifies every writer's log on a span volume (issue 29 item 5, docs/ARCHIVE_FORMAT.md#verifying-the-log): the
 * checkpoint's signature under the pinned key, the entries and tiles against its root, its consistency with the last
 * checkpoint verified here, and every entry against its span file. A log that checks out (with `run` unset) becomes
 * the new pin in `verifiedDir`; a broken one leaves the pin as it was.
 */
export async function verifyLogs(
  opts: PinOptions & {
    spanDir: string;
    /** Only the entries of this run are checked against files; the pin is then left as it was. */
    run?: string;
  },
): Promise<{ ok: boolean; logs: LogVerdict[] }> {
  const facts = new RunFacts(opts.spanDir, await prunedRuns(opts.spanDir));
  const logs: LogVerdict[] = [];
  for (const name of await listLogs(opts.spanDir)) {
    const verdict = await verifyOneLog(folderSource(logFolder(opts.spanDir, name)), {
      ...opts,
      checked: 'spans',
      keepPin: opts.run !== undefined,
      more: (entries) => checkSpans(opts.spanDir, entries ?? [], facts, opts.run),
    });
    if (verdict !== null) logs.push(verdict);
  }
  return { ok: logs.every((l) => l.status !== 'break'), logs };
}
