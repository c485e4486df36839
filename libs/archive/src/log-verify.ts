import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { SPAN_FILE, runDir, spanFileName } from './archive-paths';
import { ArchiveError } from './archive-error';
import { sha256Hex } from './canonical-json';
import { readChain } from './chain-reader';
import { isErrno } from './durable-fs';
import { prunedRuns, readPin, writePin, type LogPin } from './log-pins';
import { parseVerifierKey, type NoteVerifier } from './signed-note';
import { CHECKPOINT_FILE, VKEY_FILE } from './span-log';
import {
  LogCheckFailed,
  listLogs,
  logFolder,
  parseSpanEntry,
  peekCheckpoint,
  readEntries,
  readLogFile,
  readTile,
} from './span-log-read';
import { openCheckpoint, type Checkpoint } from './tlog-checkpoint';
import { leafHash, treeRoot, type Hash, type SubtreeHash } from './tlog-merkle';
import { TILE_WIDTH, perfectRoot, tileHashes, tilePath, tileWidth } from './tlog-tiles';

/** The kinds of break a log check names (docs/ARCHIVE_FORMAT.md#verifying-the-log), in the order they are checked. */
type LogBreakKind =
  'log-signature' | 'log-rewritten' | 'log-rolled-back' | 'span-missing' | 'span-changed' | 'span-unlogged';

interface LogBreak {
  kind: LogBreakKind;
  /** The entry's index in the log, when the break is tied to one. */
  entry: number | null;
  detail: string;
}

export interface LogVerdict {
  log: string;
  origin: string | null;
  /** The checkpoint's tree size (entries checked). */
  size: number;
  status: 'ok' | 'pruned-ok' | 'break';
  /** Entries whose span file was removed under a prune record (GUARDIAN_KEEP_SPANS) or a pruned run (--prune). */
  pruned: number;
  /** The size of the last verified checkpoint this one was found consistent with; null the first time. */
  since: number | null;
  /** Whether this checkpoint is now the pin in the verified folder (not with `run`, a break, or a folder not writable). */
  pinned: boolean;
  break: LogBreak | null;
}

/** The perfect subtrees of a list of leaf hashes: how the tree of every entry is hashed without its tiles. */
function leavesSubtree(leaves: readonly Hash[]): SubtreeHash {
  return (level, index) => perfectRoot(leaves.slice(index * 2 ** level, (index + 1) * 2 ** level));
}

class Broken extends Error {
  constructor(readonly brk: LogBreak) {
    super(brk.detail);
  }
}

function fail(kind: LogBreakKind, detail: string, entry: number | null = null): never {
  throw new Broken({ kind, entry, detail });
}

/** The log's key and checkpoint, checked against the pinned key (the first verify pins it). */
async function openLog(
  dir: string,
  pin: LogPin | null,
): Promise<{ vkey: string; note: string; c: Checkpoint }> {
  const vkeyBytes = await readLogFile(dir, VKEY_FILE);
  const noteBytes = await readLogFile(dir, CHECKPOINT_FILE);
  if (noteBytes === null) fail('log-rewritten', 'the log has no checkpoint');
  const vkey = (vkeyBytes?.toString('utf8') ?? '').trim();
  if (pin !== null && vkey !== pin.vkey)
    fail('log-signature', 'the verifier key is not the one pinned when this log was first verified');
  let verifier: NoteVerifier;
  try {
    verifier = parseVerifierKey(vkey);
  } catch (err) {
    if (!ArchiveError.is(err, 'ARCHIVE_BAD_OPTION')) throw err;
    fail('log-signature', `the log has no usable verifier key (${err.message})`);
  }
  const note = noteBytes.toString('utf8');
  const c = openCheckpoint(note, verifier);
  if (c === null) fail('log-signature', 'the checkpoint is not signed by the log key under its origin');
  return { vkey, note, c };
}

/** Every hash tile of the tree must hold the hashes its leaves make: served proofs are made from them. */
async function checkTiles(dir: string, size: number, leaves: readonly Hash[]): Promise<void> {
  const sub = leavesSubtree(leaves);
  for (let level = 0; TILE_WIDTH ** level <= size; level += 1) {
    for (let n = 0; tileWidth(level, n, size) > 0; n += 1) {
      const width = tileWidth(level, n, size);
      const hashes = tileHashes(await readTile(dir, level, n, width));
      const good =
        hashes?.length === width && hashes.every((h, i) => h.equals(sub(level * 8, n * TILE_WIDTH + i)));
      if (!good)
        fail('log-rewritten', `${tilePath(level, n, width)} does not hold the hashes of the entries`);
    }
  }
}

/** Every entry, with the tree they hash to checked against the checkpoint, through the entries and the tiles. */
async function checkTree(dir: string, c: Checkpoint): Promise<{ entries: string[]; leaves: Hash[] }> {
  try {
    const entries = await readEntries(dir, c.size);
    const leaves = entries.map((e) => leafHash(Buffer.from(e, 'utf8')));
    if (!treeRoot(c.size, leavesSubtree(leaves)).equals(c.root))
      fail('log-rewritten', `the ${c.size} entries do not hash to the checkpoint's root`);
    await checkTiles(dir, c.size, leaves);
    return { entries, leaves };
  } catch (err) {
    // A missing or short tile or bundle is a truncated log; an I/O failure is not a verdict and goes up.
    if (!(err instanceof LogCheckFailed)) throw err;
    fail('log-rewritten', err.message);
  }
}

/** The last verified checkpoint must be a prefix of this one (RFC 6962 consistency, here from every leaf). */
function checkConsistent(pin: LogPin | null, c: Checkpoint, leaves: readonly Hash[]): number | null {
  if (pin === null) return null;
  const old = peekCheckpoint(pin.checkpoint);
  if (old === null) return null;
  if (old.size > c.size)
    fail('log-rolled-back', `the checkpoint has ${c.size} entries; ${old.size} were verified before`);
  if (!treeRoot(old.size, leavesSubtree(leaves)).equals(old.root))
    fail(
      'log-rolled-back',
      `the first ${old.size} entries are not the ones verified before: a rewritten history`,
    );
  return old.size;
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

/**
 * Verifies every writer's log on a span volume (issue 29 item 5, docs/ARCHIVE_FORMAT.md#verifying-the-log): the
 * checkpoint's signature under the pinned key, the entries and tiles against its root, its consistency with the last
 * checkpoint verified here, and every entry against its span file. A log that checks out (with `run` unset) becomes
 * the new pin in `verifiedDir`; a broken one leaves the pin as it was.
 */
export async function verifyLogs(opts: {
  spanDir: string;
  verifiedDir: string | null;
  /** Only the entries of this run are checked against files; the pin is then left as it was. */
  run?: string;
  now?: () => Date;
  /** Told when a checkpoint that checked out could not be kept in `verifiedDir`. */
  onPinError?: (cause: unknown) => void;
}): Promise<{ ok: boolean; logs: LogVerdict[] }> {
  const facts = new RunFacts(opts.spanDir, await prunedRuns(opts.spanDir));
  const logs: LogVerdict[] = [];
  for (const name of await listLogs(opts.spanDir)) {
    const dir = logFolder(opts.spanDir, name);
    const vkey = await readLogFile(dir, VKEY_FILE);
    // A log folder without a key was never opened by a writer (its first commit had not come): nothing to check.
    if (vkey === null && (await readLogFile(dir, CHECKPOINT_FILE)) === null) continue;
    const origin = peekOrigin(vkey);
    const pin = opts.verifiedDir === null || origin === null ? null : await readPin(opts.verifiedDir, origin);
    const verdict: LogVerdict = {
      log: name,
      origin,
      size: 0,
      status: 'ok',
      pruned: 0,
      since: null,
      pinned: false,
      break: null,
    };
    try {
      const { note, c, vkey: key } = await openLog(dir, pin);
      verdict.size = c.size;
      const { entries, leaves } = await checkTree(dir, c);
      verdict.since = checkConsistent(pin, c, leaves);
      verdict.pruned = await checkSpans(opts.spanDir, entries, facts, opts.run);
      if (verdict.pruned > 0) verdict.status = 'pruned-ok';
      if (opts.verifiedDir !== null && opts.run === undefined) {
        const at = (opts.now ?? (() => new Date()))().toISOString();
        const pin = { origin: c.origin, vkey: key, checkpoint: note, verified_at: at };
        // A folder that cannot be written changes no verdict: the log checked out; the CLI says it was not kept.
        verdict.pinned = await writePin(opts.verifiedDir, pin).then(
          () => true,
          (cause: unknown) => (opts.onPinError?.(cause), false),
        );
      }
    } catch (err) {
      if (!(err instanceof Broken)) throw err;
      verdict.status = 'break';
      verdict.break = err.brk;
    }
    logs.push(verdict);
  }
  return { ok: logs.every((l) => l.status !== 'break'), logs };
}

/** The origin a verifier key names (`<origin>+<id>+<key>`), unverified: it only names the pin to compare with. */
function peekOrigin(vkey: Buffer | null): string | null {
  const name = vkey?.toString('utf8').trim().split('+')[0];
  return name === undefined || name === '' ? null : name;
}
