import * as path from 'node:path';

import { ArchiveError } from './archive-error';
import { CHAIN_FILE, runDir } from './archive-paths';
import { GENESIS_PREV, anchorLineText, sealLine, type ChainBody, type ChainLine } from './chain-line';
import { readChain } from './chain-reader';
import { appendDurable, ensureDir } from './durable-fs';

export type NewChainLine = Omit<ChainBody, 'v' | 'seq' | 'prev' | 'at'>;

/**
 * Appends lines to an existing run's chain from outside its writer (--seal-existing, --repair). Only for runs
 * whose writer is gone: a live writer keeps its head in memory and would fork the chain.
 */
export async function appendToChain(
  opts: { spanDir: string; anchorDir: string | null; run: string; now: () => Date },
  lines: NewChainLine[],
): Promise<ChainLine[]> {
  const chain = await readChain(opts.spanDir, opts.run);
  if (chain.tornBytes > 0 || chain.lines.some((l) => !l.ok)) {
    throw new ArchiveError('ARCHIVE_CHAIN_BROKEN', `run ${opts.run}: the chain has unreadable lines`);
  }
  const last = chain.lines[chain.lines.length - 1];
  let seq = last?.ok === true ? last.line.seq : 0;
  let prev = last?.ok === true ? last.line.hash : GENESIS_PREV;
  const out: ChainLine[] = [];
  const target = path.join(runDir(opts.spanDir, opts.run), CHAIN_FILE);
  for (const fields of lines) {
    const { line, text } = sealLine({ v: 1, seq: seq + 1, prev, at: opts.now().toISOString(), ...fields });
    await appendDurable(target, text);
    if (opts.anchorDir !== null) {
      await ensureDir(opts.anchorDir);
      await appendDurable(
        path.join(opts.anchorDir, `${opts.run}.jsonl`),
        anchorLineText(line.seq, line.hash),
      );
    }
    seq = line.seq;
    prev = line.hash;
    out.push(line);
  }
  return out;
}
