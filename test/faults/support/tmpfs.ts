import { execFileSync } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
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
  readOnly(): Promise<void>;
  readWrite(): void;
  unmount(): Promise<void>;
}

/** The files some process holds open under `dir` (from /proc): what makes a remount read-only "busy". */
function openUnder(dir: string): string[] {
  const held: string[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (target.startsWith(`${dir}/`)) held.push(`pid ${pid}: ${target}`);
      } catch {
        // the descriptor closed while we looked
      }
    }
  }
  return held;
}

function mount(args: string[]): void {
  try {
    execFileSync('mount', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? String(err);
    const dir = args.at(-1)!;
    const held = openUnder(dir);
    throw new Error(
      `mount ${args.join(' ')} failed (the volume faults need root to mount a tmpfs): ${stderr.trim()}` +
        (held.length > 0 ? `; open under it: ${held.join(', ')}` : ''),
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
    async readOnly() {
      // The kernel refuses a read-only remount while a file on it is open for writing ("mount point is busy"):
      // the sidecar appends to its logs behind each answer, so the fault waits for the moment none is open, as a
      // volume that errors into read-only would take it at any moment. The bound is a hang guard, not a verdict.
      for (let attempt = 1; ; attempt++) {
        try {
          mount(['-o', 'remount,ro', dir]);
          return;
        } catch (err) {
          if (!String(err).includes('busy') || attempt >= 2_000) throw err;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
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
