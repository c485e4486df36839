import { CodedError } from '@guardian/errors';

/** Stable codes for every failure the memo reports (HOUSE rule 4). */
export type MemoErrorCode =
  | 'MEMO_BAD_OPTION'
  | 'MEMO_ENTRY_INVALID'
  | 'MEMO_REDIS_AUTH'
  | 'MEMO_REDIS_TIMEOUT'
  | 'MEMO_REDIS_UNAVAILABLE'
  | 'MEMO_REDIS_FAILED';

/**
 * A memo failure with a stable `code`. The memo never throws these into the request path (ARCHITECTURE.md#fail-open
 * rule 1):
 * they reach the caller only through `onError` and the connect() result.
 */
export class MemoError extends CodedError<MemoErrorCode> {
  override readonly name = 'MemoError';
}
