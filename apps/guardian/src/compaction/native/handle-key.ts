import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

import { codeOf, CodedError } from '@guardian/errors';

/** The key is 32 random bytes, written base64url; a Secret may hold any text of at least that much entropy. */
const KEY_BYTES = 32;
const MIN_KEY_CHARS = 32;

export class HandleKeyError extends CodedError<'NATIVE_KEY_UNUSABLE'> {
  override readonly name = 'HandleKeyError';
}

/**
 * The deployment's handle key: read from `path`, or made there at first start (mode 0600, created exclusively so
 * two replicas starting at once on a shared volume end up with the one key the first wrote). With `given` (a mounted
 * Kubernetes Secret, GUARDIAN_NATIVE_KEY_FILE) the file must exist: a missing Secret is a boot error, never a new key
 * that would refuse every other replica's handles.
 */
export function loadHandleKey(path: string, opts: { mustExist: boolean }): Buffer {
  if (!opts.mustExist && !existsSync(path)) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // Written whole under a temp name, then linked into place (link refuses to replace): a replica starting beside
    // another never reads a key file the other is still writing, and of two, exactly one key wins.
    const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      const fd = openSync(tmp, 'wx', 0o600);
      try {
        writeSync(fd, `${randomBytes(KEY_BYTES).toString('base64url')}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      linkSync(tmp, path);
    } catch (err) {
      // EEXIST: made at an earlier start or by another replica; it is read below.
      if (codeOf(err) !== 'EEXIST')
        throw new HandleKeyError('NATIVE_KEY_UNUSABLE', `cannot create the handle key file ${path}`, {
          cause: err,
        });
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw new HandleKeyError('NATIVE_KEY_UNUSABLE', `cannot read the handle key file ${path}`, {
      cause: err,
    });
  }
  if (text.length < MIN_KEY_CHARS)
    throw new HandleKeyError(
      'NATIVE_KEY_UNUSABLE',
      `the handle key file ${path} holds under ${MIN_KEY_CHARS} characters`,
    );
  return Buffer.from(text, 'utf8');
}
