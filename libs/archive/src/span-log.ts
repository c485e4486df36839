import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { ArchiveError } from './archive-error';
import { ensureDir, isErrno, writeFileDurable } from './durable-fs';
import { noteSigner, signNote, verifierKey, type NoteSigner } from './signed-note';
import { checkpointBody, openCheckpoint, type Checkpoint } from './tlog-checkpoint';
import { leafHash, treeRoot, type Hash } from './tlog-merkle';
import {
  TILE_WIDTH,
  decodeBundle,
  encodeBundle,
  perfectRoot,
  tileHashes,
  tilePath,
  tileSubtree,
  tileWidth,
} from './tlog-tiles';

/** Options of one writer's span log. */
export interface SpanLogOptions {
  /** The log's folder: `<span dir>/.tlog/<writer>` (logFolder). */
  dir: string;
  /** The checkpoint origin, also the signing key's name. */
  origin: string;
  /** The 32-byte Ed25519 seed (loadLogKey). */
  seed: Uint8Array;
  /** Told when a checkpoint could not be written; the spans stay sealed, the next flush tries again. */
  onWarning?: (cause: unknown) => void;
}

export const CHECKPOINT_FILE = 'checkpoint';
export const VKEY_FILE = 'vkey';

/**
 * One writer's transparency log (issue 29, docs/ARCHIVE_FORMAT.md#the-log): entries appended in order, tiles and entry
 * bundles laid out as C2SP tlog-tiles says, and a signed checkpoint after each flush. Only this object writes its
 * folder; appends are grouped into one flush (tiles, then the checkpoint) that runs behind the caller.
 */
export class SpanLog {
  private treeSize = 0;
  /** The hashes of the rightmost (partial) tile at each tile level, and the entries of the partial bundle. */
  private readonly edge: Hash[][] = [[]];
  private bundle: Buffer[] = [];
  private readonly pending: string[] = [];
  private flushQueued: Promise<void> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly signer: NoteSigner;
  private latest: string | null = null;

  private constructor(private readonly opts: SpanLogOptions) {
    this.signer = noteSigner(opts.origin, opts.seed);
  }

  /** Opens the log in `dir`, carrying on from its checkpoint (which must be this key's and match its tiles). */
  static async open(opts: SpanLogOptions): Promise<SpanLog> {
    const log = new SpanLog(opts);
    await ensureDir(opts.dir);
    await log.recover();
    // The public half beside the tiles, so a reader of the volume (and GET /guardian/archive/log/vkey) has it.
    await writeFileDurable(path.join(opts.dir, VKEY_FILE), `${log.verifierKey}\n`);
    return log;
  }

  /** The verifier key, in Go's note format. */
  get verifierKey(): string {
    return verifierKey(this.signer);
  }

  get origin(): string {
    return this.opts.origin;
  }

  /** Entries in the tree: the newest checkpoint's size when no flush is under way. */
  get size(): number {
    return this.treeSize;
  }

  /** The newest signed checkpoint, or null before the first. */
  get checkpoint(): string | null {
    return this.latest;
  }

  /**
   * Appends entries in the order given; resolves once a signed checkpoint covers them (or rejects). The flush runs in
   * the log's own queue, so a caller that does not wait is never slowed by it.
   */
  append(entries: readonly string[]): Promise<void> {
    // One push per entry: a spread of a very long list overflows the call stack (the issue 29 audit's 315k).
    for (const e of entries) this.pending.push(e);
    if (this.flushQueued === undefined) {
      const next = this.queue.then(() => {
        this.flushQueued = undefined;
        return this.flush();
      });
      this.flushQueued = next;
      this.queue = next.then(
        () => undefined,
        (cause: unknown) => this.opts.onWarning?.(cause),
      );
    }
    return this.flushQueued;
  }

  /** Settles when every append so far is covered by a checkpoint (or has failed and been reported). */
  async settled(): Promise<void> {
    await this.queue;
  }

  private async flush(): Promise<void> {
    const batch = this.pending.splice(0);
    if (batch.length === 0) return;
    const before = this.edge.map((e) => e.length);
    const bundleBefore = this.bundle.length;
    const files: { rel: string; bytes: Buffer }[] = [];
    const done: string[] = [];
    for (const text of batch) {
      const entry = Buffer.from(text, 'utf8');
      this.bundle.push(entry);
      this.edge[0]!.push(leafHash(entry));
      this.treeSize += 1;
      if (this.bundle.length === TILE_WIDTH) {
        const n = this.treeSize / TILE_WIDTH - 1;
        files.push({ rel: tilePath('entries', n, TILE_WIDTH), bytes: encodeBundle(this.bundle) });
        done.push(`${tilePath('entries', n, TILE_WIDTH)}.p`);
        this.bundle = [];
      }
      for (let level = 0; this.edge[level]!.length === TILE_WIDTH; level += 1) {
        const full = this.edge[level]!;
        const n = this.treeSize / TILE_WIDTH ** (level + 1) - 1;
        files.push({ rel: tilePath(level, n, TILE_WIDTH), bytes: Buffer.concat(full) });
        done.push(`${tilePath(level, n, TILE_WIDTH)}.p`);
        this.edge[level] = [];
        if (this.edge[level + 1] === undefined) this.edge[level + 1] = [];
        this.edge[level + 1]!.push(perfectRoot(full));
      }
    }
    this.edge.forEach((hashes, level) => {
      if (hashes.length > 0 && hashes.length !== before[level]) {
        const n = this.edgeIndex(level);
        files.push({ rel: tilePath(level, n, hashes.length), bytes: Buffer.concat(hashes) });
      }
    });
    if (this.bundle.length > 0 && this.bundle.length !== bundleBefore) {
      const n = Math.floor(this.treeSize / TILE_WIDTH);
      files.push({ rel: tilePath('entries', n, this.bundle.length), bytes: encodeBundle(this.bundle) });
    }
    // Tiles first, each durable, then the checkpoint that names them: a reader never meets a checkpoint whose
    // tiles are not there yet (C2SP tlog-tiles: partial tiles of every checkpointed size are served).
    for (const f of files) {
      const target = path.join(this.opts.dir, f.rel);
      await ensureDir(path.dirname(target));
      await writeFileDurable(target, f.bytes);
    }
    const body = checkpointBody({ origin: this.opts.origin, size: this.treeSize, root: this.root() });
    const note = signNote(body, this.signer);
    await writeFileDurable(path.join(this.opts.dir, CHECKPOINT_FILE), note);
    this.latest = note;
    // Partial tiles whose full tile is now covered by a checkpoint may go (C2SP tlog-tiles "Partial Tiles").
    for (const rel of done) await fsp.rm(path.join(this.opts.dir, rel), { recursive: true, force: true });
  }

  /** The index of the partial tile at `level`. */
  private edgeIndex(level: number): number {
    return Math.floor(this.treeSize / TILE_WIDTH ** (level + 1));
  }

  private root(): Hash {
    return treeRoot(
      this.treeSize,
      tileSubtree((level, n) => (n === this.edgeIndex(level) ? (this.edge[level] ?? null) : null)),
    );
  }

  /** Loads the right edge of the tree at the checkpoint's size and checks it against the checkpoint's root. */
  private async recover(): Promise<void> {
    let note: string;
    try {
      note = await fsp.readFile(path.join(this.opts.dir, CHECKPOINT_FILE), 'utf8');
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return;
      throw err;
    }
    const c: Checkpoint | null = openCheckpoint(note, this.signer);
    if (c === null) {
      throw new ArchiveError(
        'ARCHIVE_CHAIN_BROKEN',
        `the log in ${this.opts.dir} has a checkpoint this key did not sign`,
      );
    }
    this.treeSize = c.size;
    for (let level = 0; TILE_WIDTH ** level <= c.size; level += 1) {
      const n = this.edgeIndex(level);
      const width = tileWidth(level, n, c.size);
      this.edge[level] = [];
      if (width === 0) continue;
      const bytes = await fsp.readFile(path.join(this.opts.dir, tilePath(level, n, width)));
      this.edge[level] = tileHashes(bytes) ?? [];
    }
    const width = c.size % TILE_WIDTH;
    if (width > 0) {
      const n = Math.floor(c.size / TILE_WIDTH);
      const bytes = await fsp.readFile(path.join(this.opts.dir, tilePath('entries', n, width)));
      this.bundle = decodeBundle(bytes) ?? [];
    }
    const leaves = this.bundle.map((e) => leafHash(e));
    const matches = leaves.length === width && leaves.every((h, i) => h.equals(this.edge[0]![i]!));
    if (!matches || !this.root().equals(c.root)) {
      throw new ArchiveError(
        'ARCHIVE_CHAIN_BROKEN',
        `the log in ${this.opts.dir} does not match its checkpoint`,
      );
    }
    this.latest = note;
  }
}
