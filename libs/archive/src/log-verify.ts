import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { runDir, spanFileName } from './archive-paths';
import { sha256Hex } from './canonical-json';
import { readChain } from './chain-reader';
import { isErrno } from './durable-fs';
import { checkCoverage, pinnedButGone } from './log-coverage';
import { allSpanLines } from './log-leftovers';
import { prunedRuns, readPin, writePin, type LogPin } from './log-pins';
import {
  Broken,
  checkConsistent,
  checkTree,
  checkVerifierKey,
  fail,
  openLog,
  peekOrigin,
} from './log-tree-check';
import { markBroken, type ExaminedLog, type LogVerdict, type LogsReport } from './log-verdict';
import { CHECKPOINT_FILE, VKEY_FILE } from './span-log';
import { folderSource, listLogs, logFolder, parseSpanEntry, type LogSource } from './span-log-read';
import { readWriter, writerState, type WriterRecord, type WriterState } from './writer-lock';

export type { LogVerdict, LogsReport } from './log-verdict';

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

/** Each entry against its span file (whether every span line has its entry is log-coverage's part). */
async function checkSpans(
  spanDir: string,
  entries: readonly string[],
  facts: RunFacts,
  onlyRun: string | undefined,
): Promise<number> {
  let pruned = 0;
  for (const [i, text] of entries.entries()) {
    const e = parseSpanEntry(text);
    if (e === null) fail('log-rewritten', `entry ${i} is not a span entry`, i);
    if (onlyRun !== undefined && e.run !== onlyRun) continue;
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
 * the verifier has them). Null for a folder with neither a key nor a checkpoint; a log with a key and no checkpoint yet
 * (claimed, nothing logged) is empty, unless a checkpoint of it was verified before.
 */
async function examineLog(
  src: LogSource,
  opts: PinOptions & {
    checked: LogVerdict['checked'];
    more?: (entries: string[] | null) => Promise<number>;
    writer?: WriterState | null;
  },
): Promise<ExaminedLog | null> {
  const vkeyBytes = await src.read(VKEY_FILE);
  const hasCheckpoint = (await src.read(CHECKPOINT_FILE)) !== null;
  if (vkeyBytes === null && !hasCheckpoint) return null;
  const origin = peekOrigin(vkeyBytes);
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
    waiting: 0,
    writer: opts.writer ?? null,
  };
  const out: ExaminedLog = { verdict, entries: null, vkey: null, next: null };
  try {
    if (!hasCheckpoint && pin === null) {
      out.vkey = checkVerifierKey(vkeyBytes);
      out.entries = [];
      return out;
    }
    const { note, c, vkey: key } = await openLog(src, pin);
    out.vkey = key;
    verdict.size = c.size;
    const { entries, leaves } = await checkTree(src, c, { entries: opts.checked !== 'hashes' });
    verdict.since = checkConsistent(pin, c, leaves);
    out.entries = entries;
    verdict.pruned = (await opts.more?.(entries)) ?? 0;
    if (verdict.pruned > 0) verdict.status = 'pruned-ok';
    const at = (opts.now ?? (() => new Date()))().toISOString();
    out.next = { origin: c.origin, vkey: key, checkpoint: note, verified_at: at };
  } catch (err) {
    if (!(err instanceof Broken)) throw err;
    markBroken(verdict, err.brk);
  }
  return out;
}

/** Keeps the checkpoint that checked out as the log's pin; a folder that cannot be written changes no verdict. */
async function keepPin(ex: ExaminedLog, opts: PinOptions): Promise<void> {
  if (opts.verifiedDir === null || ex.next === null || ex.verdict.status === 'break') return;
  ex.verdict.pinned = await writePin(opts.verifiedDir, ex.next).then(
    () => true,
    (cause: unknown) => (opts.onPinError?.(cause), false),
  );
}

/**
 * One log checked against its pin (a sidecar's served log: `checked` is `entries` or `hashes`). A log that checks out
 * becomes the new pin unless `keepPin`; a broken one leaves it.
 */
export async function verifyOneLog(
  src: LogSource,
  opts: PinOptions & {
    checked: LogVerdict['checked'];
    keepPin?: boolean;
    more?: (entries: string[] | null) => Promise<number>;
  },
): Promise<LogVerdict | null> {
  const ex = await examineLog(src, opts);
  if (ex === null) return null;
  if (opts.keepPin !== true) await keepPin(ex, opts);
  return ex.verdict;
}

/**
 * Verifies every writer's log on a span volume (issue 29 item 5, docs/ARCHIVE_FORMAT.md#verifying-the-log): the
 * checkpoint's signature under the pinned key, the entries and tiles against its root, its consistency with the last
 * checkpoint verified here, every entry against its span file, then every span line against the log it names
 * (log-coverage), and every pinned log of this volume is still there. A log that checks out (with `run` unset) becomes
 * the new pin in `verifiedDir`; a broken one leaves the pin as it was.
 */
export async function verifyLogs(
  opts: PinOptions & {
    spanDir: string;
    /** Only the entries and span lines of this run are checked; the pin is then left as it was. */
    run?: string;
  },
): Promise<LogsReport> {
  const facts = new RunFacts(opts.spanDir, await prunedRuns(opts.spanDir));
  const examined = new Map<string, ExaminedLog>();
  for (const name of await listLogs(opts.spanDir)) {
    const dir = logFolder(opts.spanDir, name);
    const writer = await readWriter(dir);
    const state = writer === null ? null : await writerState(writer);
    const ex = await examineLog(folderSource(dir), {
      ...opts,
      checked: 'spans',
      writer: state,
      more: (entries) => checkSpans(opts.spanDir, entries ?? [], facts, opts.run),
    });
    if (ex !== null) examined.set(name, ex);
    else if (writer !== null && state !== null) examined.set(name, claimedOnly(name, writer, state));
  }
  const lines = await allSpanLines(opts.spanDir, opts.run);
  const { missing, withoutLog } = checkCoverage(lines, examined);
  if (opts.run === undefined && opts.verifiedDir !== null)
    missing.push(...(await pinnedButGone(opts.verifiedDir, examined, missing)));
  const logs = [...examined.values()].filter(
    (ex) => ex.vkey !== null || ex.verdict.waiting > 0 || ex.verdict.break !== null,
  );
  if (opts.run === undefined) for (const ex of logs) await keepPin(ex, opts);
  const verdicts = [...logs.map((ex) => ex.verdict), ...missing].sort((a, b) => a.log.localeCompare(b.log));
  return { ok: verdicts.every((l) => l.status !== 'break'), logs: verdicts, withoutLog };
}

/** A log folder holding only writer.json: claimed by a writer that had logged nothing yet. */
function claimedOnly(name: string, rec: WriterRecord, writer: WriterState): ExaminedLog {
  return {
    verdict: {
      log: name,
      origin: rec.origin,
      size: 0,
      status: 'ok',
      checked: 'spans',
      pruned: 0,
      since: null,
      pinned: false,
      break: null,
      waiting: 0,
      writer,
    },
    entries: [],
    vkey: null,
    next: null,
  };
}
