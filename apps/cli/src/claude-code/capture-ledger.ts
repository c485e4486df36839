import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';

import { listSpans, spanFileName } from '@guardian/archive';

import { writeFileAtomic } from './snapshot-store';
import { archivedLineBytes, parseJsonOrUndefined } from './transcript-lines';
import { isErrno, readJsonFile } from './fs-errors';

/** `route` of every capture span: how readers tell a Claude Code transcript span from a proxy span. */
export const CAPTURE_ROUTE = 'claude-code';

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

const RunJsonSchema = z.looseObject({ session_hash: z.string() });
const CaptureSpanSchema = z.looseObject({
  kind: z.string(),
  route: z.string(),
  first_index: z.number(),
  messages: z.array(z.unknown()),
});

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
export async function sessionRuns(
  spanDir: string,
  sessionHash: string,
  known: string[] = [],
): Promise<string[]> {
  let names: string[];
  try {
    names = await fsp.readdir(spanDir);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw err;
  }
  const candidates = names.filter(
    (n) =>
      n.startsWith(`cc-${sessionHash.slice(0, 12)}-`) ||
      n.includes(`-${sessionHash.slice(0, 8)}-`) ||
      known.includes(n),
  );
  const out: string[] = [];
  for (const run of candidates) {
    try {
      const meta = RunJsonSchema.safeParse(
        parseJsonOrUndefined(await fsp.readFile(path.join(spanDir, run, 'run.json'), 'utf8')),
      );
      if (meta.success && meta.data.session_hash === sessionHash) out.push(run);
    } catch (err) {
      // A run without a readable run.json is not one this adapter wrote; skipping it cannot lose data.
      if (!isErrno(err, 'ENOENT')) throw err;
    }
  }
  return out.sort();
}

/** Transcript bytes a capture span covers: [first_index, end). Null for spans that are not captures. */
export async function captureSpanRange(
  spanDir: string,
  run: string,
  span: number,
): Promise<{ start: number; end: number } | null> {
  const text = await fsp.readFile(path.join(spanDir, run, spanFileName(span)), 'utf8');
  const parsed = CaptureSpanSchema.safeParse(parseJsonOrUndefined(text));
  if (!parsed.success || parsed.data.kind !== 'capture' || parsed.data.route !== CAPTURE_ROUTE) return null;
  const bytes = parsed.data.messages.reduce<number>((sum, m) => sum + archivedLineBytes(m), 0);
  return { start: parsed.data.first_index, end: parsed.data.first_index + bytes };
}

/**
 * The archived offset as the spans themselves show it (seed: "recovered from the spans themselves if a
 * capture is cut off"): each run's newest span ends where the next capture must start.
 */
export async function recoverOffset(spanDir: string, runs: string[]): Promise<number> {
  let offset = 0;
  for (const run of runs) {
    const spans = await listSpans({ spanDir, run });
    const last = spans[spans.length - 1];
    if (last === undefined) continue;
    const range = await captureSpanRange(spanDir, run, last.span);
    if (range !== null) offset = Math.max(offset, range.end);
  }
  return offset;
}
