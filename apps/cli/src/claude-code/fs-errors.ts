import { promises as fsp } from 'node:fs';

import { z } from 'zod';

import { codeOf } from '@guardian/errors';

import { parseJsonOrUndefined } from './transcript-lines';

/** True when the error is a Node fs error with the given code (ENOENT, EEXIST, ...). */
export function isErrno(err: unknown, code: string): boolean {
  // codeOf is structural, not `instanceof Error`: fs errors can come from another realm (jest's sandbox).
  return codeOf(err) === code;
}

/** The error's stable `code` (fs errno or our CC_* codes), else CC_FAILED. */
export function errorCode(err: unknown): string {
  return codeOf(err) ?? 'CC_FAILED';
}

/**
 * A JSON file read against a schema: null when there is no file, else the schema's verdict (text that is not JSON
 * fails it, so a damaged cache file reads as invalid and the caller rebuilds or drops it).
 */
export async function readJsonFile<T>(
  file: string,
  schema: z.ZodType<T>,
): Promise<z.ZodSafeParseResult<T> | null> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return null;
    throw err;
  }
  return schema.safeParse(parseJsonOrUndefined(text));
}

export function errorMessage(err: unknown): string {
  const message =
    typeof err === 'object' && err !== null ? (err as { message?: unknown }).message : undefined;
  return typeof message === 'string' ? message : String(err);
}
