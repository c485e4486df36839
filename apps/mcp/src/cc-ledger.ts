import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';
import { codeOf } from '@guardian/errors';

// The Claude Code hook (context-guardian-claude-code capture) keeps one ledger per session under
// `<data dir>/claude-code/sessions/<session hash>.json`: the transcript it copies and the transcript offset
// at each PreCompact. Only the fields read here are checked, so the hook may add others.
const LedgerSchema = z.looseObject({
  transcript_path: z.string().min(1),
  last_capture_at: z.string(),
  precompact: z.array(z.looseObject({ offset: z.number().int().nonnegative() })).default([]),
});

/** What the hook recorded about one Claude Code session. */
export interface HookLedger {
  transcriptPath: string;
  lastCaptureAt: string;
  /** Transcript byte offsets where Claude Code compacted, oldest first. */
  precompactOffsets: number[];
}

/** The folder the hook keeps its ledgers in. */
export function ledgerDir(dataDir: string): string {
  return path.join(dataDir, 'claude-code', 'sessions');
}

/** Every readable ledger, newest capture first; none when the hook never ran. Damaged ledgers are left out. */
export async function readLedgers(dir: string): Promise<HookLedger[]> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (err: unknown) {
    if (codeOf(err) === 'ENOENT') return [];
    throw err;
  }
  const out: HookLedger[] = [];
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    const parsed = LedgerSchema.safeParse(parseOrNull(await fsp.readFile(path.join(dir, name), 'utf8')));
    if (!parsed.success) continue;
    out.push({
      transcriptPath: parsed.data.transcript_path,
      lastCaptureAt: parsed.data.last_capture_at,
      precompactOffsets: parsed.data.precompact.map((p) => p.offset),
    });
  }
  return out.sort((a, b) => b.lastCaptureAt.localeCompare(a.lastCaptureAt));
}

function parseOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // A ledger cut by a crash: the hook rebuilds it from the spans on its next capture; here it is skipped.
    return null;
  }
}
