import { createHash } from 'node:crypto';

import type { NeutralMessage } from './types';

/** sha256 hex of a string (session keys, digests). Hashing is computation, not I/O: it keeps this library pure. */
export function hashText(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * JSON with object keys sorted, so that the same item hashes the same whatever order a client serialised it in.
 * Lenient (any number, `undefined` as null): it keys the memo, it is not the archive's JCS `canonicalJson`, whose
 * bytes are specified in docs/ARCHIVE_FORMAT.md; the different name keeps the two from being mistaken.
 */
export function sortedKeyJson(value: unknown): string {
  const parts: string[] = [];
  writeCanonical(value, (piece) => parts.push(piece));
  return parts.join('');
}

/**
 * sha256 hex of an item's canonical JSON, fed to the hash piece by piece: a 45 MB paste is never built into one more
 * string (issue 12: memory on the compaction path was ~36 times the body).
 */
export function canonicalDigest(value: unknown): string {
  const hash = createHash('sha256');
  writeCanonical(value, (piece) => hash.update(piece));
  return hash.digest('hex');
}

function writeCanonical(value: unknown, out: (piece: string) => void): void {
  if (value === null || typeof value !== 'object') {
    out(JSON.stringify(value) ?? 'null');
    return;
  }
  if (Array.isArray(value)) {
    out('[');
    value.forEach((v, i) => {
      if (i > 0) out(',');
      writeCanonical(v, out);
    });
    out(']');
    return;
  }
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  out('{');
  entries.forEach(([k, v], i) => {
    out(`${i > 0 ? ',' : ''}${JSON.stringify(k)}:`);
    writeCanonical(v, out);
  });
  out('}');
}

const PREFIX_SEED = 'context-guardian/prefix/v1';

/**
 * Prefix hashes of a conversation: `hashes[k]` identifies messages [0, k) by content, so the memo finds the
 * summary of an evicted prefix whatever came after it (ARCHITECTURE.md#sessions: conversations are identified by
 * content).
 * Chained, so each prefix costs one hash of one message digest.
 */
export function prefixHashes(messages: readonly NeutralMessage[], known: readonly string[] = []): string[] {
  // `known`: hashes already had for a leading part of these same messages (a turn that resends them), kept as they are.
  const out: string[] = known.length > 0 ? known.slice(0, messages.length + 1) : [hashText(PREFIX_SEED)];
  for (let i = out.length - 1; i < messages.length; i += 1) {
    const m = messages[i]!;
    const prev = out[out.length - 1] ?? '';
    out.push(
      createHash('sha256')
        .update(prev)
        .update(m.role === 'system' ? 's' : 'm')
        .update(m.digest)
        .digest('hex'),
    );
  }
  return out;
}
