import { CodedError } from '@guardian/errors';

/** Stable codes for every failure the archive reports (HOUSE rule 4). */
export type ArchiveErrorCode =
  | 'ARCHIVE_BAD_ID'
  | 'ARCHIVE_BAD_AGE'
  | 'ARCHIVE_NOT_FOUND'
  | 'ARCHIVE_WRITE_FAILED'
  | 'ARCHIVE_CHAIN_BROKEN'
  | 'ARCHIVE_BAD_OPTION'
  | 'ARCHIVE_ABORTED'
  | 'ARCHIVE_LOG_KEY_UNUSABLE';

/** An archive failure with a stable `code`; the CLI maps codes to exit codes, the sidecar to HTTP statuses. */
export class ArchiveError extends CodedError<ArchiveErrorCode> {
  override readonly name = 'ArchiveError';
}
