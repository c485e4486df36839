import { execFileSync } from 'node:child_process';
import { mkdtemp, open, rm, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A real, small tmpfs mounted for one test: the span volume that fills up, turns read-only and comes back.
 * Needs root (CI runs as root, ARCHITECTURE.md#tests); without it the test fails with the reason, it never skips.
 */
export interface Tmpfs {
  dir: string;
  /** Writes a ballast file until the volume answers ENOSPC. */
  fill(): Promise<void>;
  /** Removes the ballast: the volume has room again. */
  unfill(): Promise<void>;
  readOnly(): void;
  readWrite(): void;
  unmount(): Promise<void>;
}

function mount(args: string[]): void {
  try {
    execFileSync('mount', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? String(err);
    throw new Error(
      `mount ${args.join(' ')} failed (the volume faults need root to mount a tmpfs): ${stderr.trim()}`,
    );
  }
}

export async function mountTmpfs(sizeBytes: number): Promise<Tmpfs> {
  const dir = await mkdtemp(join(tmpdir(), 'cg-tmpfs-'));
  mount(['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0700`, 'tmpfs', dir]);
  const ballast = join(dir, 'ballast');
  return {
    dir,
    async fill() {
      const handle = await open(ballast, 'a');
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      try {
        for (;;) await handle.write(chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      } finally {
        await handle.close();
      }
    },
    async unfill() {
      await rm(ballast, { force: true });
    },
    readOnly() {
      mount(['-o', 'remount,ro', dir]);
    },
    readWrite() {
      mount(['-o', 'remount,rw', dir]);
    },
    async unmount() {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      } finally {
        await rmdir(dir).catch((err: unknown) => {
          throw new Error(`tmpfs mount point ${dir} not removed`, { cause: err });
        });
      }
    },
  };
}
