import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';

import type { ReadChain } from './chain-reader';
import { isErrno } from './durable-fs';
import { readJsonl } from './jsonl';
import type { ChainBreak } from './chain-break';

const AnchorLineSchema = z.object({ seq: z.number().int().positive(), head: z.string() });

/** Checks the run's anchor file (GUARDIAN_SEAL_ANCHOR_DIR) against its chain: every head it recorded must be there. */
export async function checkAnchor(
  anchorDir: string,
  run: string,
  chain: ReadChain,
): Promise<{ anchored: boolean; broken: ChainBreak | null }> {
  const file = path.join(anchorDir, `${run}.jsonl`);
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return { anchored: false, broken: null };
    throw err;
  }
  // A last line without newline is an anchor append cut by a crash; the chain line it copied is intact.
  const complete = text.slice(0, text.lastIndexOf('\n') + 1);
  const { rows, skipped } = await readJsonl(file, AnchorLineSchema);
  if (skipped > (complete === text ? 0 : 1)) {
    return {
      anchored: true,
      broken: {
        kind: 'anchor-mismatch',
        seq: null,
        file: null,
        detail: 'the anchor file has unreadable lines',
      },
    };
  }
  for (const row of rows) {
    const entry = chain.lines[row.seq - 1];
    const hash = entry?.ok === true ? entry.line.hash : undefined;
    if (hash !== row.head) {
      const detail =
        hash === undefined
          ? `the chain has no line ${row.seq}, which the anchor recorded`
          : `chain line ${row.seq} is not the head the anchor recorded`;
      return { anchored: true, broken: { kind: 'anchor-mismatch', seq: row.seq, file: null, detail } };
    }
  }
  return { anchored: true, broken: null };
}
