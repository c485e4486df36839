import { sha256Hex } from './canonical-json';
import { openNote, type NoteVerifier } from './signed-note';
import { HASH_SIZE, leafHash, verifyInclusion, type Hash } from './tlog-merkle';

/** A checkpoint's body (C2SP tlog-checkpoint): origin, tree size, base64 root. */
export interface Checkpoint {
  origin: string;
  size: number;
  root: Hash;
}

/** `<origin>\n<size>\n<base64 root>\n`: the note text a log signs. */
export function checkpointBody(c: Checkpoint): string {
  return `${c.origin}\n${c.size}\n${c.root.toString('base64')}\n`;
}

/** Parses a checkpoint body (extension lines allowed and ignored); null when it is not one. */
export function parseCheckpoint(text: string): Checkpoint | null {
  const [origin, size, root] = text.split('\n');
  if (origin === undefined || origin === '' || size === undefined || root === undefined) return null;
  if (!/^(0|[1-9]\d*)$/.test(size)) return null;
  const hash = Buffer.from(root, 'base64');
  if (hash.length !== HASH_SIZE || hash.toString('base64') !== root) return null;
  const n = Number(size);
  return Number.isSafeInteger(n) ? { origin, size: n, root: hash } : null;
}

/** The checkpoint of a signed note when `verifier` signed it and its origin is the verifier's name; else null. */
export function openCheckpoint(note: string, verifier: NoteVerifier): Checkpoint | null {
  const text = openNote(note, verifier);
  const c = text === null ? null : parseCheckpoint(text);
  // C2SP tlog-checkpoint: the log's key name SHOULD match the origin; ours always does, so we require it.
  return c !== null && c.origin === verifier.name ? c : null;
}

/** The log entry of one span (issue 29): `context-guardian span <run_id> <index> sha256:<hex of the file>`. */
export function spanEntry(run: string, span: number, fileBytes: Uint8Array): string {
  return `context-guardian span ${run} ${span} sha256:${sha256Hex(fileBytes)}`;
}

const PROOF_HEADER = 'c2sp.org/tlog-proof@v1';

/** A `c2sp.org/tlog-proof@v1` bundle: the entry's index, its inclusion proof and the signed checkpoint verbatim. */
export function formatTlogProof(p: { index: number; proof: readonly Hash[]; checkpoint: string }): string {
  const lines = [PROOF_HEADER, `index ${p.index}`, ...p.proof.map((h) => h.toString('base64'))];
  return `${lines.join('\n')}\n\n${p.checkpoint}`;
}

/** Parses a tlog-proof bundle (the `extra` line is read and not trusted); null when malformed. */
function parseTlogProof(
  text: string,
): { extra: Buffer | null; index: number; proof: Hash[]; checkpoint: string } | null {
  const blank = text.indexOf('\n\n');
  if (blank < 0) return null;
  const lines = text.slice(0, blank).split('\n');
  if (lines.shift() !== PROOF_HEADER) return null;
  let extra: Buffer | null = null;
  if (lines[0]?.startsWith('extra ') === true) extra = Buffer.from(lines.shift()!.slice(6), 'base64');
  const index = /^index (0|[1-9]\d*)$/.exec(lines.shift() ?? '');
  if (index === null) return null;
  const proof: Hash[] = [];
  for (const line of lines) {
    const h = Buffer.from(line, 'base64');
    if (h.length !== HASH_SIZE || h.toString('base64') !== line) return null;
    proof.push(h);
  }
  return { extra, index: Number(index[1]), proof, checkpoint: text.slice(blank + 2) };
}

/**
 * Verifies a tlog-proof bundle offline for `entry` (C2SP tlog-proof "Verifying"): the checkpoint signed by
 * `verifier` under its origin, and the inclusion proof binding the entry's leaf hash to its root.
 */
export function verifyTlogProof(
  bundle: string,
  entry: string,
  verifier: NoteVerifier,
): { ok: true; index: number; checkpoint: Checkpoint } | { ok: false; reason: string } {
  const p = parseTlogProof(bundle);
  if (p === null) return { ok: false, reason: 'not a c2sp.org/tlog-proof@v1 bundle' };
  const c = openCheckpoint(p.checkpoint, verifier);
  if (c === null) return { ok: false, reason: 'the checkpoint is not signed by this log key' };
  if (!verifyInclusion(p.index, c.size, leafHash(Buffer.from(entry, 'utf8')), p.proof, c.root)) {
    return { ok: false, reason: 'the inclusion proof does not lead to the checkpoint root' };
  }
  return { ok: true, index: p.index, checkpoint: c };
}
