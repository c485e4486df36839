import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { z } from 'zod';

import { captureRuns } from '@guardian/archive';
import { LruMap } from '@guardian/collections';
import { handoffMarkdown, sessionHandoff, type SessionHandoff } from '@guardian/compaction';
import { codeOf } from '@guardian/errors';

import { GuardianConfig } from '../../config/guardian-config';
import type { RequestContext } from '../handoff';
import { DecideReporter } from './decide-reporter';

/** A session's latest hand-off, and whose it is (team mode answers it to its owner only). */
export interface StoredHandoff {
  handoff: SessionHandoff & { compacted_at: string; run: string | null };
  ownerHash?: string;
}

/** The hand-off file's names inside the session's run folder (docs/ARCHIVE_FORMAT.md: not span files). */
export const HANDOFF_JSON = 'handoff.json';
export const HANDOFF_MD = 'handoff.md';

/** handoff.json as this writer writes it; a file that does not read as one is not a hand-off. */
const HandoffFileSchema = z.object({
  goal: z.string().nullable(),
  pins: z.array(z.object({ text: z.string(), status: z.enum(['current', 'superseded']) })),
  decisions: z.array(z.string()),
  files: z.array(z.string()),
  open_question: z.string().nullable(),
  messages: z.number(),
  compacted_at: z.string(),
  run: z.string().nullable(),
});

/**
 * The hand-off of each compacted session (issue 32 item 5): read from the request's history behind the request, kept
 * in memory for `GET /guardian/sessions/<id>/handoff`, and written as `handoff.json` and `handoff.md` into the
 * session's run folder on the volume, replaced at each compaction; after a restart the endpoint answers from the file. A write that fails is counted and logged, never
 * the request's failure (ARCHITECTURE.md#fail-open).
 */
@Injectable()
export class HandoffWriter implements OnModuleDestroy {
  private readonly latest: LruMap<string, StoredHandoff>;
  private writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly config: GuardianConfig,
    private readonly reporter: DecideReporter,
  ) {
    this.latest = new LruMap(config.compaction.maxSessions);
  }

  /**
   * The latest hand-off of a session hash: this process's, else the newest `handoff.json` of the session's runs on the
   * volume (written before a restart, or by another replica). `ownerHash` given (null: no owner), only runs whose
   * run.json names that owner are read, so a developer never reads another's through a hash they guessed.
   */
  async find(sessionHash: string, ownerHash?: string | null): Promise<StoredHandoff | undefined> {
    const held = this.latest.get(sessionHash);
    if (held && (ownerHash === undefined || (held.ownerHash ?? null) === ownerHash)) return held;
    const runs = await captureRuns(
      this.config.paths.spanDir,
      sessionHash,
      ownerHash === undefined ? {} : { ownerHash },
    );
    let newest: StoredHandoff['handoff'] | undefined;
    for (const run of runs) {
      const file = await readHandoff(join(this.config.paths.spanDir, run, HANDOFF_JSON));
      if (file && (!newest || file.compacted_at > newest.compacted_at)) newest = file;
    }
    if (!newest) return undefined;
    return ownerHash ? { handoff: newest, ownerHash } : { handoff: newest };
  }

  /** Records the hand-off of a compacted request; `run` is the run folder its spans are in, when known. */
  record(ctx: RequestContext, run: string | null, compactedAt: string): void {
    // The hand-off is the developer's own conversation, as the usage is: a sub-agent's compaction is not it.
    if (!this.config.compaction.handoff || ctx.session.agent !== undefined) return;
    const handoff = { ...sessionHandoff(ctx.conv.messages), compacted_at: compactedAt, run };
    const stored: StoredHandoff = { handoff };
    if (ctx.session.ownerHash) stored.ownerHash = ctx.session.ownerHash;
    this.latest.set(ctx.session.hash, stored);
    if (run === null) return;
    // One write at a time, in order: the files end as the newest hand-off.
    this.writes = this.writes.then(() => this.write(run, handoff, ctx.conv.route));
    this.reporter.behind(this.writes);
  }

  /** Shutdown waits for the queued writes, as it does for the archive's commits. */
  async onModuleDestroy(): Promise<void> {
    await this.writes;
  }

  private async write(run: string, handoff: StoredHandoff['handoff'], route: string): Promise<void> {
    // The run folder exists: its spans named it. It is not made here, so a folder pruned away is not made again.
    const dir = join(this.config.paths.spanDir, run);
    try {
      for (const [name, text] of [
        [HANDOFF_JSON, `${JSON.stringify(handoff, null, 2)}\n`],
        [HANDOFF_MD, handoffMarkdown(handoff)],
      ] as const) {
        // Written whole then renamed: a reader never sees half a file. Not named `.*.tmp`, which the seal check
        // reads as an archive write in flight (docs/ARCHIVE_FORMAT.md §5).
        const tmp = join(dir, `.${name}.part`);
        await writeFile(tmp, text, { mode: 0o600 });
        await rename(tmp, join(dir, name));
      }
    } catch (err) {
      // Safe to go on: the hand-off is a convenience beside the archive; the endpoint still answers from memory
      // (until a restart, when the previous file, if any, answers).
      this.reporter.archiveBehindFailed('handoff_write', { route }, err);
    }
  }
}

/** A hand-off file, or undefined when there is none or it does not read as one (a run compacted before it existed). */
async function readHandoff(path: string): Promise<StoredHandoff['handoff'] | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    // A run with no hand-off yet is not an error; anything else (a volume that cannot be read) is the caller's 500.
    if (codeOf(err) === 'ENOENT') return undefined;
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    // Written whole then renamed, so a torn file means someone else wrote it: it is not a hand-off we can serve.
    if (err instanceof SyntaxError) return undefined;
    throw err;
  }
  const parsed = HandoffFileSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}
