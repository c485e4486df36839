import type { NeutralMessage } from './types';

/**
 * Where a conversation may be cut. A cut `c` evicts the non-system messages before index `c` and keeps the rest.
 * A cut never separates a tool call from any of its results: pairs are matched by id, not by position
 * (a result may come several messages after its call, and parallel calls answer in any order).
 * A cut must also leave the kept tail starting at a user message, so that every format's role rules hold
 * (Anthropic requires it; chat templates expect it).
 */
export function allowedCuts(messages: readonly NeutralMessage[]): boolean[] {
  // Plain loops and one pass for the role rule: a memo-hit turn of 354 messages asked for this twice and spent
  // 80 us in the closures of the forEach version (issue 16).
  const n = messages.length;
  const allowed: boolean[] = new Array<boolean>(n + 1);
  const callAt = new Map<string, number>();
  let firstEvictable = -1;
  for (let i = 0; i < n; i++) {
    const m = messages[i]!;
    allowed[i] = m.role === 'user';
    if (firstEvictable === -1 && m.role !== 'system') firstEvictable = i;
    for (const id of m.callIds) callAt.set(id, i);
  }
  // Every cut strictly after a call and at or before its last result would split the pair.
  for (let i = 0; i < n; i++) {
    const ids = messages[i]!.resultIds;
    for (const id of ids) {
      const c = callAt.get(id);
      if (c === undefined || c >= i) continue;
      for (let k = c + 1; k <= i; k++) allowed[k] = false;
    }
  }
  allowed[n] = false; // evicting everything leaves nothing to answer
  // A cut that evicts nothing is not a cut: cut 0, and any cut at or before the first non-system message
  // (system messages are never evicted, so cut 1 after a leading system prompt would make an empty stretch).
  for (let k = 0; k <= (firstEvictable === -1 ? n : firstEvictable); k++) allowed[k] = false;
  return allowed;
}

/** Indexes of the non-system messages before `cut`: what a cut evicts. */
export function evictedIndexes(messages: readonly NeutralMessage[], from: number, cut: number): number[] {
  const out: number[] = [];
  for (let i = from; i < cut; i++) if (messages[i]?.role !== 'system') out.push(i);
  return out;
}
