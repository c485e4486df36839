import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';

import { utcDay } from './compaction-log';
import { isErrno } from './durable-fs';

/** Parses one JSON line; undefined when it does not parse. */
export function parseJsonLine(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    // A torn last line (a crash mid-append) or a hand edit: the caller skips it and counts it, never fails.
    if ((err as { name?: unknown } | null)?.name === 'SyntaxError') return undefined;
    throw err;
  }
}

/** Lines of a JSONL file that parse and match `schema`; `skipped` counts the rest. */
export async function readJsonl<T>(
  file: string,
  schema: z.ZodType<T>,
): Promise<{ rows: T[]; skipped: number; missing: boolean }> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return { rows: [], skipped: 0, missing: true };
    throw err;
  }
  const rows: T[] = [];
  let skipped = 0;
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    const parsed = schema.safeParse(parseJsonLine(raw));
    if (parsed.success) rows.push(parsed.data);
    else skipped += 1;
  }
  return { rows, skipped, missing: false };
}

/**
 * Rows of every `<replica>-<yyyymmdd>.jsonl` in `dir` with `ts` at or after `since`. Files from days before
 * `since` are not opened.
 */
export async function readDailyLogs<T extends { ts: string }>(
  dir: string,
  since: Date,
  schema: z.ZodType<T>,
): Promise<{ rows: T[]; skipped: number; found: boolean }> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return { rows: [], skipped: 0, found: false };
    throw err;
  }
  const firstDay = utcDay(since);
  const rows: T[] = [];
  let skipped = 0;
  for (const name of names.sort()) {
    const day = /-(\d{8})\.jsonl$/.exec(name)?.[1];
    if (day === undefined || day < firstDay) continue;
    const read = await readJsonl(path.join(dir, name), schema);
    skipped += read.skipped;
    for (const row of read.rows) if (Date.parse(row.ts) >= since.getTime()) rows.push(row);
  }
  return { rows, skipped, found: true };
}
