import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

import { ArchiveError } from './archive-error';

/** C2SP signed-note: signature type 0x01 is Ed25519. */
const ED25519 = 0x01;
/** An Ed25519 seed as PKCS#8 DER: this prefix, then the 32 bytes (RFC 8410 §7). */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const SIG_PREFIX = '\u2014 ';
const NAME = /^[^\s+]+$/u;

/** An Ed25519 note key: a name (the log's origin) and the key itself. */
export interface NoteSigner {
  name: string;
  keyId: number;
  privateKey: KeyObject;
  publicKey: Buffer;
}

/** A parsed verifier key (`<name>+<hex key id>+<base64(0x01 || key)>`). */
export interface NoteVerifier {
  name: string;
  keyId: number;
  publicKey: Buffer;
}

function assertName(name: string): string {
  if (!NAME.test(name)) throw new ArchiveError('ARCHIVE_BAD_OPTION', 'a note key name has no spaces or "+"');
  return name;
}

/** C2SP signed-note: key ID = SHA-256(name || 0x0A || 0x01 || public key)[:4], big-endian. */
function noteKeyId(name: string, publicKey: Uint8Array): number {
  const hash = createHash('sha256').update(`${name}\n`).update(Buffer.of(ED25519)).update(publicKey).digest();
  return hash.readUInt32BE(0);
}

/** The Ed25519 signer for `name` from a 32-byte seed (RFC 8032 private key). */
export function noteSigner(name: string, seed: Uint8Array): NoteSigner {
  if (seed.length !== 32) throw new ArchiveError('ARCHIVE_BAD_OPTION', 'an Ed25519 seed is 32 bytes');
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_PREFIX, seed]),
    format: 'der',
    type: 'pkcs8',
  });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  const publicKey = Buffer.from(spki.subarray(SPKI_PREFIX.length));
  return { name: assertName(name), keyId: noteKeyId(name, publicKey), privateKey, publicKey };
}

/** The verifier key in Go's note format (golang.org/x/mod/sumdb/note NewVerifier reads it). */
export function verifierKey(v: NoteVerifier): string {
  const id = v.keyId.toString(16).padStart(8, '0');
  return `${v.name}+${id}+${Buffer.concat([Buffer.of(ED25519), v.publicKey]).toString('base64')}`;
}

/** The signer key in Go's note format (`PRIVATE+KEY+<name>+<hex id>+<base64(0x01 || seed)>`), note.NewSigner's. */
export function signerKeyText(name: string, seed: Uint8Array): string {
  const s = noteSigner(name, seed);
  const id = s.keyId.toString(16).padStart(8, '0');
  return `PRIVATE+KEY+${name}+${id}+${Buffer.concat([Buffer.of(ED25519), seed]).toString('base64')}`;
}

/** Splits at the first `count - 1` plus signs: the base64 key at the end may hold '+' itself. */
function splitPlus(text: string, count: number): string[] {
  const parts = text.split('+');
  return parts.length <= count ? parts : [...parts.slice(0, count - 1), parts.slice(count - 1).join('+')];
}

/** Reads a signer key in Go's format: its name and seed. */
export function parseSignerKey(text: string): { name: string; seed: Buffer } {
  const parts = splitPlus(text.trim(), 5);
  const [p, k, name, , key] = parts;
  const bytes = Buffer.from(key ?? '', 'base64');
  if (parts.length !== 5 || p !== 'PRIVATE' || k !== 'KEY' || bytes.length !== 33 || bytes[0] !== ED25519) {
    throw new ArchiveError('ARCHIVE_BAD_OPTION', 'not an Ed25519 note signer key (PRIVATE+KEY+name+id+key)');
  }
  return { name: assertName(name ?? ''), seed: bytes.subarray(1) };
}

/** Parses a verifier key; throws ARCHIVE_BAD_OPTION when it is malformed or its key ID does not match. */
export function parseVerifierKey(text: string): NoteVerifier {
  const parts = splitPlus(text.trim(), 3);
  const [name, id, key] = parts;
  const bytes = Buffer.from(key ?? '', 'base64');
  if (parts.length !== 3 || !/^[0-9a-f]{8}$/.test(id ?? '') || bytes.length !== 33 || bytes[0] !== ED25519) {
    throw new ArchiveError('ARCHIVE_BAD_OPTION', 'not an Ed25519 note verifier key (name+id+key)');
  }
  const publicKey = bytes.subarray(1);
  const keyId = Number.parseInt(id!, 16);
  if (noteKeyId(assertName(name!), publicKey) !== keyId) {
    throw new ArchiveError('ARCHIVE_BAD_OPTION', 'the verifier key ID does not match its key');
  }
  return { name: name!, keyId, publicKey };
}

function assertNoteText(text: string): void {
  // C2SP signed-note: valid UTF-8, no control characters but newline, the text ends in a newline.
  if (!text.endsWith('\n') || [...text].some((ch) => ch < ' ' && ch !== '\n')) {
    throw new ArchiveError(
      'ARCHIVE_BAD_OPTION',
      'a note text ends in a newline and has no control characters',
    );
  }
}

/** Signs `text` (ending in a newline): the text, a blank line, then `— <name> base64(key ID || signature)`. */
export function signNote(text: string, signer: NoteSigner): string {
  assertNoteText(text);
  const sig = sign(null, Buffer.from(text, 'utf8'), signer.privateKey);
  const id = Buffer.alloc(4);
  id.writeUInt32BE(signer.keyId);
  return `${text}\n${SIG_PREFIX}${signer.name} ${Buffer.concat([id, sig]).toString('base64')}\n`;
}

/** A signed note split into its text and signature lines (unverified). */
export function splitNote(
  note: string,
): { text: string; signatures: { name: string; sig: Buffer }[] } | null {
  const at = note.lastIndexOf('\n\n');
  if (at < 0 || !note.endsWith('\n')) return null;
  const text = note.slice(0, at + 1);
  const signatures: { name: string; sig: Buffer }[] = [];
  for (const line of note.slice(at + 2, -1).split('\n')) {
    if (!line.startsWith(SIG_PREFIX)) return null;
    const [name, b64, extra] = line.slice(SIG_PREFIX.length).split(' ');
    const sig = Buffer.from(b64 ?? '', 'base64');
    if (name === undefined || extra !== undefined || sig.length < 5 || sig.toString('base64') !== b64)
      return null;
    signatures.push({ name, sig });
  }
  return signatures.length === 0 ? null : { text, signatures };
}

/**
 * Opens a signed note: its text when a signature by `verifier` (same name and key ID) verifies; else null. Other
 * signatures are ignored, as the spec says.
 */
export function openNote(note: string, verifier: NoteVerifier): string | null {
  const parts = splitNote(note);
  if (parts === null) return null;
  const key = createPublicKey({
    key: Buffer.concat([SPKI_PREFIX, verifier.publicKey]),
    format: 'der',
    type: 'spki',
  });
  for (const { name, sig } of parts.signatures) {
    if (name !== verifier.name || sig.readUInt32BE(0) !== verifier.keyId) continue;
    // A known name and ID must verify (C2SP signed-note "Verifiers MUST verify the signature").
    return verify(null, Buffer.from(parts.text, 'utf8'), key, sig.subarray(4)) ? parts.text : null;
  }
  return null;
}
