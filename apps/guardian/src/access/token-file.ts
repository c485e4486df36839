import { createHash } from 'node:crypto';

import { z } from 'zod';

import { OWNER_PATTERN } from '@guardian/archive';
import { CodedError } from '@guardian/errors';

/**
 * The developer tokens file (GUARDIAN_TOKENS_FILE; docs/team.md). Two spellings of one map, token -> owner:
 *
 *   # one `token owner` a line; blank lines and `#` comments are skipped
 *   4f9c...e1 alice
 *
 * or JSON: `{"<token>": "<owner>", ...}` or `[{"token": "...", "owner": "..."}, ...]`.
 *
 * A token is 16-512 visible ASCII characters (it travels in a header); an owner matches OWNER_PATTERN and is not
 * `admin`, the name the admin token's own requests are kept under. Errors name the line or entry, never a token.
 */

/** Reserved: requests made with GUARDIAN_ADMIN_TOKEN are owned by this name (docs/adr/0014-team-mode.md). */
export const ADMIN_OWNER = 'admin';

const TOKEN = /^[\x21-\x7e]{16,512}$/;

/** A tokens file that cannot be used; `where` is a line number or entry index, never the token itself. */
export class TokensFileError extends CodedError<'ACCESS_TOKENS_INVALID'> {
  override readonly name = 'TokensFileError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('ACCESS_TOKENS_INVALID', message, options);
  }
}

/** What a tokens file holds, by token digest: the raw tokens are not kept in memory once read. */
export interface TokenSet {
  /** sha256 hex of a token -> its owner. */
  owners: ReadonlyMap<string, string>;
  /** Distinct owners named. */
  ownerCount: number;
}

/** sha256 of a token: how the registry compares tokens (equal-length digests, whatever was sent). */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

const JsonMap = z.record(z.string(), z.string());
const JsonList = z.array(z.object({ token: z.string(), owner: z.string() }).strict());

/** Parses a tokens file; throws TokensFileError naming the first bad line or entry. */
export function parseTokensFile(text: string): TokenSet {
  const trimmed = text.trim();
  const entries =
    trimmed.startsWith('{') || trimmed.startsWith('[') ? jsonEntries(trimmed) : lineEntries(text);
  if (entries.length === 0) throw new TokensFileError('the tokens file names no token');
  const owners = new Map<string, string>();
  for (const { token, owner, where } of entries) {
    if (!TOKEN.test(token))
      throw new TokensFileError(`${where}: a token is 16-512 visible ASCII characters, no spaces`);
    if (!OWNER_PATTERN.test(owner))
      throw new TokensFileError(
        `${where}: owner "${owner.slice(0, 64)}" must match ${OWNER_PATTERN.source} (no "/")`,
      );
    if (owner === ADMIN_OWNER)
      throw new TokensFileError(`${where}: "${ADMIN_OWNER}" is reserved for GUARDIAN_ADMIN_TOKEN`);
    const digest = tokenDigest(token);
    if (owners.has(digest)) throw new TokensFileError(`${where}: this token is listed twice`);
    owners.set(digest, owner);
  }
  return { owners, ownerCount: new Set(owners.values()).size };
}

interface Entry {
  token: string;
  owner: string;
  where: string;
}

function lineEntries(text: string): Entry[] {
  const out: Entry[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const fields = line.split(/\s+/);
    if (fields.length !== 2)
      throw new TokensFileError(`line ${i + 1}: expected "<token> <owner>", found ${fields.length} field(s)`);
    out.push({ token: fields[0] ?? '', owner: fields[1] ?? '', where: `line ${i + 1}` });
  });
  return out;
}

function jsonEntries(text: string): Entry[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The parser's own message may quote the file's text, which holds tokens: only the fact is reported.
    throw new TokensFileError('the tokens file starts like JSON but is not valid JSON');
  }
  const map = JsonMap.safeParse(value);
  if (map.success)
    return Object.entries(map.data).map(([token, owner], i) => ({ token, owner, where: `entry ${i + 1}` }));
  const list = JsonList.safeParse(value);
  if (list.success) return list.data.map((e, i) => ({ ...e, where: `entry ${i + 1}` }));
  throw new TokensFileError(
    'JSON tokens must be {"<token>": "<owner>"} or [{"token": "...", "owner": "..."}]',
  );
}
