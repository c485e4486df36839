import { HttpException } from '@nestjs/common';

import { isArchiveError } from '@guardian/archive';

/**
 * An archive error as the recall API answers it: a bad id, age or option is the caller's (400), a run or span that
 * is missing or not theirs is 404 (the same answer, so another owner's runs cannot be probed for), anything else is
 * rethrown for the error filter (500). The message is the library's, so a remote tool prints what a local one would.
 */
export function archiveHttpError(err: unknown): unknown {
  if (!isArchiveError(err)) return err;
  switch (err.code) {
    case 'ARCHIVE_BAD_ID':
    case 'ARCHIVE_BAD_AGE':
    case 'ARCHIVE_BAD_OPTION':
      return new HttpException({ code: err.code, message: err.message }, 400);
    case 'ARCHIVE_NOT_FOUND':
      return new HttpException({ code: err.code, message: err.message }, 404);
    default:
      return err;
  }
}

/** Runs one archive read, turning its coded errors into the API's statuses. */
export async function archiveCall<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    throw archiveHttpError(err);
  }
}
