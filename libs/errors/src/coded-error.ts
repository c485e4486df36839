/**
 * The one coded-error pattern of the house (docs/ARCHITECTURE.md#errors), after fastify-reply-from's lib/errors.js and
 * twenty's CustomException<Code>: each library declares its codes as a union and one subclass,
 *
 *   export class ArchiveError extends CodedError<ArchiveErrorCode> { override readonly name = 'ArchiveError'; }
 *
 * and callers test `ArchiveError.is(err, 'ARCHIVE_NOT_FOUND')` (an instanceof check) instead of reading a `code`
 * property off whatever was thrown. Nothing here speaks HTTP: the edge maps codes to statuses.
 */
export abstract class CodedError<Code extends string> extends Error {
  constructor(
    readonly code: Code,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** True when `err` is an instance of this class, and carries `code` when one is given. */
  static is<E extends CodedError<string>>(
    this: abstract new (...args: never[]) => E,
    err: unknown,
    code?: E['code'],
  ): err is E {
    return err instanceof this && (code === undefined || err.code === code);
  }
}

/**
 * The code of a coded error, or of a Node system error (`ENOSPC`, `ECONNREFUSED`: not ours, so not a CodedError),
 * else undefined. The one place the tree reads a `code` off an unknown value.
 */
export function codeOf(err: unknown): string | undefined {
  // A CodedError passes the same test; written once for both.
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  const code: unknown = err.code;
  return typeof code === 'string' ? code : undefined;
}
