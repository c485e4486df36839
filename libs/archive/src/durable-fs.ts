import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

/** Test-only crash points (issue 4: "the writer has test-only crash points"). */
export type CrashPoint =
  'after-span-fsync' | 'after-rename' | 'mid-chain-line' | 'before-commit' | 'before-checkpoint';
const CRASH_POINTS: readonly string[] = [
  'after-span-fsync',
  'after-rename',
  'mid-chain-line',
  'before-commit',
  'before-checkpoint',
];

/** A crash point armed for the N-th span write (`after-rename@3`); N defaults to 1. */
export interface ArmedCrash {
  point: CrashPoint;
  onWrite: number;
}

/** Parses `point` or `point@N`; unknown values are ignored so a stray env var never breaks production. */
export function parseCrashPoint(raw: string | undefined): ArmedCrash | null {
  if (raw === undefined || raw === '') return null;
  const [point, count] = raw.split('@');
  if (point === undefined || !CRASH_POINTS.includes(point)) return null;
  const onWrite = count === undefined ? 1 : Number(count);
  return Number.isSafeInteger(onWrite) && onWrite > 0 ? { point: point as CrashPoint, onWrite } : null;
}

/** SIGKILL ourselves: the harshest crash a test can stage (no handlers, no flush). */
export function crashNow(): never {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable: SIGKILL did not stop the process');
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function tempName(target: string): string {
  return path.join(
    path.dirname(target),
    `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
  );
}

/**
 * Writes `data` to `target` so that a reader sees the old file or the whole new one, never half: temp file,
 * fsync, rename, fsync of the folder (rename durability needs the directory entry flushed; POSIX rename(2)).
 */
export async function writeFileDurable(
  target: string,
  data: string | Uint8Array,
  hooks: { afterFsync?: () => void; afterRename?: () => void } = {},
): Promise<void> {
  await writeFileInPlace(target, data, hooks);
  await fsyncDir(path.dirname(target));
}

/**
 * writeFileDurable without the folder's fsync: the file's bytes are durable and it has its final name, but the name
 * itself becomes durable only with the folder's next fsync (the run writer's commit, ADR 0013).
 */
export async function writeFileInPlace(
  target: string,
  data: string | Uint8Array,
  hooks: { afterFsync?: () => void; afterRename?: () => void } = {},
): Promise<void> {
  const tmp = tempName(target);
  const handle = await fsp.open(tmp, 'wx', FILE_MODE);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close();
    // A full volume must not leave a half temp file behind; the original error is the one that matters.
    await fsp.rm(tmp, { force: true }).catch((cleanup: unknown) => {
      throw new AggregateError([err, cleanup], 'write failed and its temp file could not be removed');
    });
    throw err;
  }
  await handle.close();
  hooks.afterFsync?.();
  await fsp.rename(tmp, target);
  hooks.afterRename?.();
}

/**
 * Creates `target` with `data` unless it exists, never showing a reader a partly written file: the bytes are written
 * and fsynced under a temp name, then linked to `target` (link, unlike rename, refuses to replace). Of two processes
 * creating one file at once, exactly one wins; the other gets `false` and reads the winner's whole file.
 */
export async function createFileOnce(target: string, data: string | Uint8Array): Promise<boolean> {
  const tmp = tempName(target);
  const handle = await fsp.open(tmp, 'wx', FILE_MODE);
  try {
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await fsp.link(tmp, target);
    } catch (err) {
      if (isErrno(err, 'EEXIST')) return false;
      throw err;
    }
    await fsyncDir(path.dirname(target));
    return true;
  } finally {
    await fsp.rm(tmp, { force: true });
  }
}

/** Appends bytes and fsyncs before returning. */
export async function appendDurable(target: string, data: string | Uint8Array): Promise<void> {
  const handle = await fsp.open(target, 'a', FILE_MODE);
  try {
    await handle.appendFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Appends bytes without waiting for them to reach the disk (a crash of the process keeps them; a power cut may not). */
export async function appendPlain(target: string, data: string | Uint8Array): Promise<void> {
  await fsp.appendFile(target, data, { mode: FILE_MODE });
}

/** fsyncs a file that exists. */
export async function fsyncFile(target: string): Promise<void> {
  const handle = await fsp.open(target, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function ensureDir(dir: string): Promise<void> {
  await fsp.mkdir(dir, { recursive: true, mode: DIR_MODE });
}

/** True when the error is a Node fs error with the given code (ENOENT, EEXIST, ...). */
export function isErrno(err: unknown, code: string): boolean {
  // Not `instanceof Error`: fs errors can come from another realm (jest's sandbox), where that test fails.
  return typeof err === 'object' && err !== null && (err as NodeJS.ErrnoException).code === code;
}

/**
 * Appends lines to files of one folder, making the folder once rather than on every append (a mkdir per compaction
 * log line showed up at 3% of the sidecar's CPU under load), and again when it has vanished since (ENOENT). Appends
 * that arrive while one is being written go out together in the next one, with one fsync (group commit: a busy
 * sidecar wrote each compaction log line and receipt with an open, an fsync and a close of its own); each caller's
 * promise still settles only once its line is durable.
 */
export class FolderAppender {
  private ready = false;
  private readonly queued = new Map<string, Batch>();
  private writing: Promise<void> | undefined;

  /**
   * `gatherMs`: how long an append waits for others before a batch is written. The compaction log and the receipts
   * are written behind the request, so a short wait costs no client anything and lets one fsync carry the lines of
   * consecutive turns, where one client's turns come one at a time and never overlap a write (ADR 0017).
   */
  constructor(
    private readonly dir: string,
    private readonly gatherMs = 0,
  ) {}

  append(name: string, data: string): Promise<void> {
    let q = this.queued.get(name);
    if (!q) {
      q = batch();
      this.queued.set(name, q);
    }
    q.data.push(data);
    this.writing ??= this.drain();
    // One promise for the lines that go out together: they are durable at the same moment. A promise, a waiter and
    // two closures per line, kept until the batch's fsync, cost the usage log (a line per answered request) more in
    // garbage collection than its writes.
    return q.done;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queued.size > 0) {
        // Before every batch, not only the first: lines that arrived while the last batch was fsynced wait for more,
        // or a steady stream of appends would be written a few lines an fsync (one client's turns at 1,100 a second
        // cost 0.29 ms of CPU each in fsyncs of three lines; docs/BENCHMARKS.md).
        if (this.gatherMs > 0) await new Promise((resolve) => setTimeout(resolve, this.gatherMs));
        const batch = [...this.queued];
        this.queued.clear();
        for (const [name, q] of batch) {
          try {
            await this.write(name, q.data.join(''));
            q.resolve();
          } catch (err) {
            q.reject(err);
          }
        }
      }
    } finally {
      // In the same turn as the last check of the queue: an append after it starts a new drain.
      this.writing = undefined;
    }
  }

  private async write(name: string, data: string): Promise<void> {
    if (!this.ready) {
      await ensureDir(this.dir);
      this.ready = true;
    }
    const target = path.join(this.dir, name);
    try {
      await appendDurable(target, data);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
      await ensureDir(this.dir);
      await appendDurable(target, data);
    }
  }
}

/** The lines queued for one file, and the promise their appends wait on. */
interface Batch {
  data: string[];
  done: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function batch(): Batch {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { data: [], done, resolve, reject };
}
