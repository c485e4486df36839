import { createHash, hash } from 'node:crypto';

import type { NeutralMessage } from './types';

/** sha256 hex of a string (session keys, digests). Hashing is computation, not I/O: it keeps this library pure. */
export function hashText(text: string): string {
  return hash('sha256', text);
}

/**
 * sha256 hex of the strings joined, without joining them: a joined string is flattened into one more copy when it is
 * hashed, and a session key's parts hold a whole first message (a 1 MB paste made a 1 MB copy on every turn). Each
 * part is encoded as UTF-8 on its own, so a surrogate pair split across two parts (a lone half at each end, which
 * would be two U+FFFD) is the one case hashed from the joined string.
 */
export function hashTexts(...parts: string[]): string {
  let before = '';
  for (const part of parts) {
    if (part === '') continue;
    if (splitsPair(before, part)) return hashText(parts.join(''));
    before = part;
  }
  const sha = createHash('sha256');
  for (const part of parts) sha.update(part);
  return sha.digest('hex');
}

function splitsPair(before: string, after: string): boolean {
  const high = before.charCodeAt(before.length - 1);
  const low = after.charCodeAt(0);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
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
  const sha = createHash('sha256');
  // Small pieces (brackets, keys, short values) are gathered and hashed together; each update is a call into C++.
  let pending = '';
  writeCanonical(value, (piece) => {
    if (piece.length >= SMALL_PIECE) {
      if (pending !== '') sha.update(pending);
      pending = '';
      sha.update(piece);
      return;
    }
    pending += piece;
    if (pending.length >= GATHERED) {
      sha.update(pending);
      pending = '';
    }
  });
  if (pending !== '') sha.update(pending);
  return sha.digest('hex');
}

/** A piece at least this long is hashed as it is; shorter ones are gathered up to GATHERED characters. */
const SMALL_PIECE = 256;
const GATHERED = 4096;

/**
 * What JSON.stringify writes differently from the characters themselves: a quote, a backslash, the control characters
 * it must escape, and surrogates (ES2019 escapes lone ones; a paired one only takes the slower way).
 */
// eslint-disable-next-line no-control-regex -- the control characters are what this looks for
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * Writes `value` as sorted-key JSON, piece by piece. A string that needs no escape is written as it is between two
 * quotes (JSON.stringify would copy it), an object's few keys are sorted in place, and a key's quoted piece is made
 * once: hashing every message of a long history on each turn made these copies the compaction path's largest
 * allocation.
 */
function writeCanonical(value: unknown, out: (piece: string) => void): void {
  if (typeof value === 'string' && !NEEDS_ESCAPE.test(value)) {
    out('"');
    out(value);
    out('"');
    return;
  }
  if (value === null || typeof value !== 'object') {
    out(JSON.stringify(value) ?? 'null');
    return;
  }
  if (Array.isArray(value)) {
    out('[');
    for (let i = 0; i < value.length; i += 1) {
      if (i > 0) out(',');
      writeCanonical(value[i], out);
    }
    out(']');
    return;
  }
  const object = value as Record<string, unknown>;
  const keys = sortKeys(Object.keys(object));
  out('{');
  let first = true;
  for (const key of keys) {
    const v = object[key];
    if (v === undefined) continue;
    const piece = keyPiece(key);
    out(first ? piece : `,${piece}`);
    first = false;
    writeCanonical(v, out);
  }
  out('}');
}

/**
 * Keys in UTF-16 code unit order (as `<` compares). An item has a handful: sorted in place by insertion, which
 * allocates nothing, where Array#sort allocated its work state on every object.
 */
function sortKeys(keys: string[]): string[] {
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i += 1) {
    const key = keys[i]!;
    let j = i - 1;
    for (; j >= 0 && keys[j]! > key; j -= 1) keys[j + 1] = keys[j]!;
    keys[j + 1] = key;
  }
  return keys;
}

/** `"key":` for each key seen, bounded: keys are few (role, content, type, text...) but the client chooses them. */
const KEY_PIECES = new Map<string, string>();
const MAX_KEY_PIECES = 512;

function keyPiece(key: string): string {
  let piece = KEY_PIECES.get(key);
  if (piece === undefined) {
    piece = `${JSON.stringify(key)}:`;
    if (KEY_PIECES.size >= MAX_KEY_PIECES) KEY_PIECES.clear();
    if (key.length <= 64) KEY_PIECES.set(key, piece);
  }
  return piece;
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
    // One call: the three parts joined hash as the three updates did, without a Hash object per message.
    out.push(hash('sha256', `${prev}${m.role === 'system' ? 's' : 'm'}${m.digest}`));
  }
  return out;
}
