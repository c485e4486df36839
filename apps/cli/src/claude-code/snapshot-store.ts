import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';
import { isErrno, readJsonFile } from './fs-errors';

/** compact-guardian's lifetime: a snapshot older than 10 minutes belongs to some other compaction. */
export const SNAPSHOT_TTL_MS = 10 * 60 * 1000;

const StoredSnapshotSchema = z.object({
  v: z.literal(1),
  created_at: z.string(),
  session_hash: z.string(),
  cwd: z.string().nullable(),
  trigger: z.string().nullable(),
  text: z.string(),
});
export type StoredSnapshot = z.infer<typeof StoredSnapshotSchema>;

/** Writes a file through a temp name and a rename, mode 0600, so a reader never sees half of it. */
export async function writeFileAtomic(target: string, text: string): Promise<void> {
  await fsp.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
  const temp = path.join(
    path.dirname(target),
    `.${path.basename(target)}.${randomBytes(4).toString('hex')}.tmp`,
  );
  await fsp.writeFile(temp, text, { mode: 0o600 });
  await fsp.rename(temp, target);
}

/** One snapshot per session under the data dir (compact-guardian: session isolation, 10-minute TTL). */
export class SnapshotStore {
  constructor(
    private readonly dir: string,
    private readonly now: () => Date,
  ) {}

  private file(sessionHash: string): string {
    return path.join(this.dir, `${sessionHash}.json`);
  }

  async write(snapshot: Omit<StoredSnapshot, 'v' | 'created_at'>): Promise<void> {
    const body: StoredSnapshot = { v: 1, created_at: this.now().toISOString(), ...snapshot };
    await writeFileAtomic(this.file(snapshot.session_hash), `${JSON.stringify(body)}\n`);
  }

  /** The session's snapshot if it is younger than the TTL; an expired or unreadable one is deleted. */
  async read(sessionHash: string): Promise<StoredSnapshot | null> {
    const parsed = await readJsonFile(this.file(sessionHash), StoredSnapshotSchema);
    if (parsed === null) return null;
    if (!parsed.success || this.expired(parsed.data.created_at)) {
      await this.delete(sessionHash);
      return null;
    }
    return parsed.data;
  }

  async delete(sessionHash: string): Promise<void> {
    await fsp.rm(this.file(sessionHash), { force: true });
  }

  /** Removes every expired snapshot (compact-guardian cleans stale ones on each save). */
  async removeExpired(): Promise<number> {
    let names: string[];
    try {
      names = await fsp.readdir(this.dir);
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return 0;
      throw err;
    }
    let removed = 0;
    for (const name of names.filter((n) => n.endsWith('.json'))) {
      const stat = await fsp.stat(path.join(this.dir, name));
      if (this.now().getTime() - stat.mtimeMs > SNAPSHOT_TTL_MS) {
        await fsp.rm(path.join(this.dir, name), { force: true });
        removed += 1;
      }
    }
    return removed;
  }

  private expired(createdAt: string): boolean {
    const age = this.now().getTime() - Date.parse(createdAt);
    return !(age >= 0 && age <= SNAPSHOT_TTL_MS);
  }
}
