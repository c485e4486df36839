import { identifiersIn } from './recall';
import type { NeutralMessage } from './types';

/**
 * Carried facts (issue 32 item 4, the seed's anchors): identifiers, paths and URLs of the evicted messages that the
 * kept messages still mention, and that the summary lost, are listed verbatim in the block. A summary drops exact
 * names first; a later turn that still says `src/retry/budget.ts` needs the model to know it is the file of the
 * evicted discussion. Chosen once, when a cut is made (the memo keeps them with its summary), so the block's bytes
 * stay those of the cut while it is reused (ARCHITECTURE.md#compaction).
 */

/** The most identifiers read from the kept messages: a tail of code names thousands. */
const TAIL_IDS = 400;
/** The most read from the evicted messages. */
const EVICTED_IDS = 20_000;

/** The anchors a new cut carries, first mentioned first, at most `maxChars` in all (0: none). */
export function carriedAnchors(opts: {
  messages: readonly NeutralMessage[];
  cut: number;
  summary: string;
  maxChars: number;
}): string[] {
  const { messages, cut } = opts;
  if (opts.maxChars <= 0 || cut <= 0) return [];
  const tail = new Set<string>();
  for (let i = cut; i < messages.length && tail.size < TAIL_IDS; i++) {
    const m = messages[i]!;
    if (m.role !== 'system') identifiersIn(m.text, TAIL_IDS, tail);
  }
  if (tail.size === 0) return [];
  const evicted = new Set<string>();
  for (let i = 0; i < Math.min(cut, messages.length) && evicted.size < EVICTED_IDS; i++) {
    const m = messages[i]!;
    if (m.role !== 'system') identifiersIn(m.text, EVICTED_IDS, evicted);
  }
  const out: string[] = [];
  let total = 0;
  for (const id of tail) {
    if (!evicted.has(id) || opts.summary.includes(id)) continue;
    if (total + id.length + 2 > opts.maxChars) break;
    total += id.length + 2;
    out.push(id);
  }
  return out;
}
