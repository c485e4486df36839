import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
// node:net for one thing only: a lock the kernel drops when its process dies, which node:fs cannot give (no flock).
import { connect, createServer, type Server, type Socket } from 'node:net';
import { hostname } from 'node:os';
import * as path from 'node:path';

import { z } from 'zod';

import { createFileOnce, isErrno, writeFileDurable } from './durable-fs';
import { parseJsonLine } from './jsonl';

/** `<log folder>/writer.json`: who writes the log, and whether it has let go of it (docs/ARCHIVE_FORMAT.md#the-log). */
const WRITER_FILE = 'writer.json';

const WriterSchema = z.object({
  /** os.hostname() of the writer: only a process on that host can tell whether it lives. */
  host: z.string(),
  pid: z.number().int(),
  /** The writer's replica tag: every run it makes carries it in its name. */
  replica: z.string().regex(/^[A-Za-z0-9_-]{1,80}$/),
  /** The checkpoint origin the log is signed under. */
  origin: z.string().min(1),
  /** The writer's lock: a Unix socket in Linux's abstract namespace; null where there is none (not Linux). */
  lock: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,100}$/)
    .nullable(),
  /** True once every span line naming this log has its entry in the checkpoint (a clean stop, or a successor). */
  released: z.boolean(),
  at: z.string(),
});

export type WriterRecord = z.infer<typeof WriterSchema>;

/** The writer record of a log folder; null when there is none (a log from before it existed) or it does not parse. */
export async function readWriter(dir: string): Promise<WriterRecord | null> {
  let text: string;
  try {
    text = await fsp.readFile(path.join(dir, WRITER_FILE), 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return null;
    throw err;
  }
  const parsed = WriterSchema.safeParse(parseJsonLine(text));
  return parsed.success ? parsed.data : null;
}

/** Replaces the writer record, atomically (a reader sees the old one or the new one). */
export async function writeWriter(dir: string, rec: WriterRecord): Promise<void> {
  await writeFileDurable(path.join(dir, WRITER_FILE), `${JSON.stringify(rec, null, 2)}\n`);
}

/** Linux's abstract socket namespace: names the kernel frees when the last process holding them ends. */
const ABSTRACT = process.platform === 'linux';

/** Whether a log can be taken in turns by several processes here (the lock needs Linux's abstract sockets). */
export function sharedLogsSupported(): boolean {
  return ABSTRACT;
}

function socketPath(name: string): string {
  return `\0${name}`;
}

/**
 * A writer's lock: a Unix socket listening under a name in Linux's abstract namespace. Only one process can listen
 * under a name (EADDRINUSE for the next), and the kernel frees it when that process ends, however it ends: so a lock
 * nobody holds is a writer that is gone, with no stale file to break and no pid to trust. It is seen by processes in
 * the same network namespace (one host, one pod); writer.json names the host, and no one judges a writer elsewhere.
 */
export class WriterLock {
  private readonly peers = new Set<Socket>();

  private constructor(
    readonly name: string,
    private readonly server: Server,
  ) {}

  /** Takes lock `name`: `held` when a live process has it; null where there is no such lock (not Linux). */
  static take(name: string): Promise<WriterLock | 'held' | null> {
    if (!ABSTRACT) return Promise.resolve(null);
    const server = createServer();
    const lock = new WriterLock(name, server);
    server.on('connection', (peer) => {
      // A prober or a waiter: it learns that the lock is held, and that it is let go when the connection ends.
      lock.peers.add(peer);
      peer.unref();
      peer.on('close', () => lock.peers.delete(peer));
      peer.on('error', () => peer.destroy()); // a peer gone first: nothing of ours depends on it
    });
    return new Promise((resolve, reject) => {
      server.once('error', (err) => (isErrno(err, 'EADDRINUSE') ? resolve('held') : reject(err)));
      server.listen({ path: socketPath(name) }, () => {
        server.unref(); // a lock never keeps its process alive
        resolve(lock);
      });
    });
  }

  /** Lets the lock go: the next taker gets it, and whoever waits on it hears so. */
  async release(): Promise<void> {
    for (const peer of this.peers) peer.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** `<log folder>/lock`: the name of the log's lock, made once by the first writer of the folder. */
const LOCK_FILE = 'lock';

/**
 * The lock name of a log folder: read from its `lock` file, which the first process to open the folder makes (of two
 * at once, one makes it and both read the winner's), so every writer of the folder names one lock, and a folder made
 * again (a volume emptied and reused) gets another.
 */
export async function lockNameOf(dir: string): Promise<string> {
  const file = path.join(dir, LOCK_FILE);
  await createFileOnce(file, `context-guardian-log-${randomBytes(12).toString('hex')}\n`);
  const name = (await fsp.readFile(file, 'utf8')).trim();
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(name)) throw new Error(`${file} does not hold a lock name`);
  return name;
}

/** Takes the lock `name`, waiting while a live process holds it; rejects when `signal` aborts first. */
export async function takeWaiting(name: string, signal?: AbortSignal): Promise<WriterLock | null> {
  for (;;) {
    const lock = await WriterLock.take(name);
    if (lock !== 'held') return lock;
    await lockLetGo(name, signal);
  }
}

/** Connects to lock `name`: `live` when a process holds it, `dead` when the kernel says none does. */
function probeLock(name: string): Promise<'live' | 'dead' | 'unknown'> {
  if (!ABSTRACT) return Promise.resolve('unknown');
  return new Promise((resolve) => {
    const socket = connect({ path: socketPath(name) });
    socket.once('connect', () => {
      socket.destroy();
      resolve('live');
    });
    socket.once('error', (err) => resolve(isErrno(err, 'ECONNREFUSED') ? 'dead' : 'unknown'));
  });
}

/** Resolves once the holder of lock `name` lets it go or dies (its connection ends); rejects when `signal` aborts. */
function lockLetGo(name: string, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ path: socketPath(name) });
    const abort = (): void => {
      socket.destroy();
      reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    if (signal?.aborted === true) return abort();
    signal?.addEventListener('abort', abort, { once: true });
    const done = (): void => {
      signal?.removeEventListener('abort', abort);
      resolve();
    };
    // Refused: no holder any more. Any other end of the connection: the holder let go or died; the caller tries again.
    socket.once('error', () => socket.destroy());
    socket.once('close', done);
  });
}

/**
 * What a verifier or a successor can say about a log's writer: `released` (it let go with every entry in its
 * checkpoint), `live`, `dead` (on this host, its lock held by no one) or `unknown` (another host, no lock, no record).
 */
export type WriterState = 'released' | 'live' | 'dead' | 'unknown';

export async function writerState(rec: WriterRecord | null): Promise<WriterState> {
  if (rec === null) return 'unknown';
  if (rec.released) return 'released';
  if (rec.lock === null || rec.host !== hostname()) return 'unknown';
  return probeLock(rec.lock);
}

/** This process as a log's writer. */
export function writerRecord(opts: {
  replica: string;
  origin: string;
  lock: WriterLock | null;
  released: boolean;
  at: Date;
}): WriterRecord {
  return {
    host: hostname(),
    pid: process.pid,
    replica: opts.replica,
    origin: opts.origin,
    lock: opts.lock?.name ?? null,
    released: opts.released,
    at: opts.at.toISOString(),
  };
}
