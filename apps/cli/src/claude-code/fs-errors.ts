/** True when the error is a Node fs error with the given code (ENOENT, EEXIST, ...). */
export function isErrno(err: unknown, code: string): boolean {
  // Not `instanceof Error`: fs errors can come from another realm (jest's sandbox), where that test fails.
  return errorCode(err) === code;
}

/** The error's stable `code` (fs errno or our CC_* codes), else CC_FAILED. */
export function errorCode(err: unknown): string {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : 'CC_FAILED';
}

export function errorMessage(err: unknown): string {
  const message =
    typeof err === 'object' && err !== null ? (err as { message?: unknown }).message : undefined;
  return typeof message === 'string' ? message : String(err);
}
