import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';

import { CAPTURE_ROUTE, captureEnd, captureRuns } from '@guardian/archive';

import { writeFileAtomic } from './snapshot-store';
import { isErrno, readJsonFile } from './fs-errors';

export { CAPTURE_ROUTE };

const LedgerSchema = z.object({
  v: z.literal(1),
  session_hash: z.string(),
  transcript_path: z.string(),
  cwd: z.string().nullable(),
  /** Bytes of the transcript already archived (always at a line start). */
  offset: z.number().int().nonnegative(),
  last_capture_at: z.string(),
  last_event: z.string().nullable(),
  runs: z.array(z.string()),
  /** Transcript offsets at each PreCompact (newest last): where Claude Code's window restarted. */
  precompact: z.array(z.object({ at: z.string(), offset: z.number() })),
});
export type Ledger = z.infer<typeof LedgerSchema>;

/** Per-session capture state under `claude-code/sessions/` (a cache: the spans are the truth). */
export class LedgerStore {
  constructor(private readonly dir: string) {}

  file(sessionHash: string): string {
    return path.join(this.dir, `${sessionHash}.json`);
  }

  async read(sessionHash: string): Promise<Ledger | null> {
    const parsed = await readJsonFile(this.file(sessionHash), LedgerSchema);
    // A damaged ledger is rebuilt from the spans, which is why it may be dropped here.
    return parsed?.success ? parsed.data : null;
  }

  async write(ledger: Ledger): Promise<void> {
    await writeFileAtomic(this.file(ledger.session_hash), `${JSON.stringify(ledger, null, 2)}\n`);
  }

  async all(): Promise<Ledger[]> {
    let names: string[];
    try {
      names = await fsp.readdir(this.dir);
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return [];
      throw err;
    }
    const out: Ledger[] = [];
    for (const name of names.filter((n) => /^[0-9a-f]{64}\.json$/.test(n))) {
      const ledger = await this.read(name.slice(0, 64));
      if (ledger !== null) out.push(ledger);
    }
    return out;
  }

  /**
   * One capture per session at a time (PreCompact and SessionEnd may overlap): an exclusive lock file. A lock
   * older than a minute outlived its hook (hooks stop after 20 s) and is taken over. Returns null when held.
   */
  async lock(sessionHash: string, now: Date): Promise<(() => Promise<void>) | null> {
    const file = path.join(this.dir, `${sessionHash}.lock`);
    await fsp.mkdir(this.dir, { recursive: true, mode: 0o700 });
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        await fsp.writeFile(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
        return () => fsp.rm(file, { force: true });
      } catch (err) {
        if (!isErrno(err, 'EEXIST')) throw err;
        const stat = await fsp.stat(file);
        if (now.getTime() - stat.mtimeMs < 60_000) return null;
        await fsp.rm(file, { force: true });
      }
    }
    return null;
  }
}

/** The session's runs in the span folder, found by name first and confirmed by run.json. */
export function sessionRuns(spanDir: string, sessionHash: string, known: string[] = []): Promise<string[]> {
  return captureRuns(spanDir, sessionHash, { known });
}

/** The archived offset as the spans themselves show it (libs/archive captureEnd). */
export function recoverOffset(spanDir: string, runs: string[]): Promise<number> {
  return captureEnd(spanDir, runs);
}
