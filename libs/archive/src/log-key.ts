import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { ArchiveError } from './archive-error';
import { createFileOnce, ensureDir, isErrno } from './durable-fs';
import { parseSignerKey, signerKeyText } from './signed-note';

/**
 * The log signing key's seed, from `file` in Go's note signer format (`PRIVATE+KEY+<name>+<id>+<key>`, what
 * golang.org/x/mod/sumdb/note GenerateKey prints, so a Kubernetes Secret can hold one made there). When the file is
 * absent and `create` is set, a new key is made there (0600); of two writers starting at once, one creates it and the
 * other reads it. The name in the file is not used: every writer signs under its own origin.
 */
export async function loadLogKey(opts: { file: string; create: boolean; name: string }): Promise<Buffer> {
  let text: string | null = null;
  try {
    text = await fsp.readFile(opts.file, 'utf8');
  } catch (err) {
    if (!isErrno(err, 'ENOENT') || !opts.create)
      throw new ArchiveError('ARCHIVE_BAD_OPTION', `log key ${opts.file} cannot be read`, { cause: err });
  }
  if (text !== null) {
    try {
      return parseSignerKey(text).seed;
    } catch (err) {
      // Named by its path and what is wrong with it, never by its content.
      const why = err instanceof Error ? err.message : String(err);
      throw new ArchiveError('ARCHIVE_BAD_OPTION', `log key ${opts.file}: ${why}`, { cause: err });
    }
  }
  const seed = randomBytes(32);
  await ensureDir(path.dirname(opts.file));
  let created: boolean;
  try {
    created = await createFileOnce(opts.file, `${signerKeyText(opts.name, seed)}\n`);
  } catch (err) {
    throw new ArchiveError('ARCHIVE_WRITE_FAILED', `log key ${opts.file} cannot be created`, { cause: err });
  }
  // Another writer on the volume made it first: use theirs, so one volume has one key.
  return created ? seed : loadLogKey({ ...opts, create: false });
}
