import { MemoError } from './memo-error';

type Results = [error: Error | null, result: unknown][] | null;

/** Results of a MULTI or pipeline; throws the first per-command error (ioredis reports them inline). */
export function checkResults(results: Results): unknown[] {
  if (results === null) throw new MemoError('MEMO_REDIS_FAILED', 'Redis discarded the transaction');
  return results.map(([error, result]) => {
    if (error !== null) throw error;
    return result;
  });
}
