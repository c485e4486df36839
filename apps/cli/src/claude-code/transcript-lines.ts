import { promises as fsp } from 'node:fs';

/** A run of complete transcript lines and where they sit in the file (end is exclusive, after the last \n). */
export interface LineBatch {
  start: number;
  end: number;
  lines: string[];
}

const READ_BLOCK = 1024 * 1024;
const NEWLINE = 0x0a;

/**
 * Yields the complete lines between `offset` and the file's size at open time, in batches of about
 * `maxBatchBytes` (a single longer line gets a batch of its own). Bytes after the last newline are a line
 * Claude Code is still writing: they are left for the next capture (seed: "copies only complete lines").
 */
export async function* readCompleteLines(opts: {
  file: string;
  offset: number;
  maxBatchBytes: number;
}): AsyncGenerator<LineBatch> {
  const handle = await fsp.open(opts.file, 'r');
  try {
    const size = (await handle.stat()).size;
    let pos = opts.offset;
    let pending = Buffer.alloc(0);
    let batch: LineBatch = { start: pos, end: pos, lines: [] };
    while (pos < size) {
      const block = Buffer.alloc(Math.min(READ_BLOCK, size - pos));
      const { bytesRead } = await handle.read(block, 0, block.length, pos);
      if (bytesRead === 0) break;
      pos += bytesRead;
      pending =
        pending.length === 0
          ? block.subarray(0, bytesRead)
          : Buffer.concat([pending, block.subarray(0, bytesRead)]);
      let from = 0;
      for (let nl = pending.indexOf(NEWLINE, from); nl >= 0; nl = pending.indexOf(NEWLINE, from)) {
        batch.lines.push(pending.toString('utf8', from, nl));
        batch.end += nl + 1 - from;
        from = nl + 1;
        if (batch.end - batch.start >= opts.maxBatchBytes) {
          yield batch;
          batch = { start: batch.end, end: batch.end, lines: [] };
        }
      }
      pending = pending.subarray(from);
    }
    if (batch.lines.length > 0) yield batch;
  } finally {
    await handle.close();
  }
}

function isContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return isContainer(value) && !Array.isArray(value);
}

/**
 * How one line is archived: the parsed JSON when serialising it again gives back the exact bytes (so readers
 * and search see structure), else the line's text as a string. Either way the original bytes are recoverable,
 * which is what lets a capture find its offset from the spans alone.
 */
export function archivedLine(text: string): unknown {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isContainer(parsed) && JSON.stringify(parsed) === text) return parsed;
  } catch {
    // Not JSON (a torn or foreign line): archived as text, verbatim, which is the safe choice.
    return text;
  }
  return text;
}

/** JSON.parse that answers undefined for text that is not JSON (a damaged cache file, a torn line). */
export function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Callers treat undefined as "unreadable" and say what they do instead (rebuild, skip, delete).
    return undefined;
  }
}

/** Parses a transcript line for reading; undefined for anything that is not a JSON object. */
export function parseTranscriptLine(text: string): Record<string, unknown> | undefined {
  // Claude Code's line format is internal and may change (seed "Limits"): an unreadable line is skipped.
  const parsed = parseJsonOrUndefined(text);
  return isRecord(parsed) ? parsed : undefined;
}

/**
 * The complete lines in the last `maxBytes` of a file (compact-guardian reads only the last 2 MB so a big
 * transcript stays inside the hook's time limit). A line cut by the window's start is dropped.
 */
export async function readTailLines(file: string, maxBytes: number): Promise<string[]> {
  const handle = await fsp.open(file, 'r');
  try {
    const size = (await handle.stat()).size;
    const start = Math.max(0, size - maxBytes);
    const buffer = Buffer.alloc(size - start);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
    const text = buffer.toString('utf8', 0, bytesRead);
    const lastNewline = text.lastIndexOf('\n');
    if (lastNewline < 0) return [];
    const lines = text.slice(0, lastNewline).split('\n');
    return start > 0 ? lines.slice(1) : lines;
  } finally {
    await handle.close();
  }
}
