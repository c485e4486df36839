import { sha256Hex } from './canonical-json';

/**
 * How sessions and owners are named in storage (docs/ARCHITECTURE.md#sessions, #access). Raw header values and owner
 * names never reach a path, a key or a label: they are hashed here, in one place, so the sidecar that writes a run
 * and every tool that looks one up compute the same hash.
 */

/** Owner names (team mode): what a developer token names. No `/`, so `<owner>/<session>` reads one way only. */
export const OWNER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$/;

/** The owner hash stored in `run.json`, spans, the compaction log and receipts. */
export function ownerHash(owner: string): string {
  return sha256Hex(`context-guardian/owner\n${owner}`);
}

/**
 * The stored form of a session key. An owned session hashes under a domain of its own with the owner apart from the
 * value, so no header value sent without a token (`alice/s1`, say) can hash to alice's session `s1`: a guessed header
 * never crosses owners (ARCHITECTURE.md#sessions).
 */
export function sessionHash(key: string, owner?: string): string {
  return owner === undefined
    ? sha256Hex(`context-guardian/session\n${key}`)
    : sha256Hex(`context-guardian/owned-session\n${owner}\n${key}`);
}

/** Which runs a reader may see: every run (`undefined`), or the runs one owner's token wrote. */
export interface ArchiveScope {
  /** An owner hash; runs whose run.json names another owner, or none, are out of scope. */
  ownerHash?: string;
}

/** True when a run with this owner hash is visible in the scope. */
export function inScope(scope: ArchiveScope | undefined, runOwnerHash: string | null | undefined): boolean {
  return scope?.ownerHash === undefined || runOwnerHash === scope.ownerHash;
}
