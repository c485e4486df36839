import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { z } from 'zod';

import { CHAIN_FILE, JOURNAL_FILE, SPAN_FILE, runDir } from './archive-paths';
import { canonicalJson, sha256Hex, type JsonValue } from './canonical-json';
import type { ChainLine } from './chain-line';
import { isErrno } from './durable-fs';
import { parseJsonLine } from './jsonl';

const HEX64 = z.string().regex(/^[0-9a-f]{64}$/);
const BASENAME = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,200}$/)
  .refine((s) => s !== '.' && s !== '..');

/** Fields every chain line carries, whatever its kind. */
const LINE_BASE = {
  v: z.literal(1),
  seq: z.number().int().positive(),
  prev: HEX64,
  at: z.string(),
  hash: HEX64,
};

/** The shape every chain line must have once its hash checks out (docs/ARCHIVE_FORMAT.md §"Chain lines"). */
const ChainLineSchema = z.discriminatedUnion('kind', [
  z.looseObject({
    ...LINE_BASE,
    kind: z.literal('span'),
    file: z.string().regex(SPAN_FILE),
    sha256: HEX64,
    size: z.number().int().nonnegative(),
    log: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,80}$/)
      .optional(),
  }),
  z.looseObject({
    ...LINE_BASE,
    kind: z.literal('journal'),
    file: z.string().regex(JOURNAL_FILE),
    sha256: HEX64,
    size: z.number().int().nonnegative(),
  }),
  z.looseObject({
    ...LINE_BASE,
    kind: z.literal('prune'),
    files: z.array(z.string().regex(SPAN_FILE)),
  }),
  z.looseObject({
    ...LINE_BASE,
    kind: z.literal('repair'),
    action: z.enum(['sealed', 'quarantined', 'truncated']),
    file: BASENAME,
    sha256: HEX64.optional(),
    size: z.number().int().nonnegative().optional(),
    to: z
      .string()
      .regex(/^quarantine\/[A-Za-z0-9._-]{1,200}$/)
      .optional(),
    bytes: z.number().int().nonnegative().optional(),
  }),
]);

/** One line of chain.jsonl as read: a checked line, or why it could not be used. */
export type ReadLine =
  { ok: true; line: ChainLine; position: number } | { ok: false; position: number; reason: string };

export interface ReadChain {
  exists: boolean;
  lines: ReadLine[];
  /** A last line without its newline: a crash mid-append (bytes of it). */
  tornBytes: number;
  /** Byte length of the complete lines. */
  completeBytes: number;
}

function isJsonObject(value: unknown): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks one line: JSON object, hash over its canonical form without `hash`, then the per-kind shape. */
export function checkLine(text: string, position: number): ReadLine {
  const value = parseJsonLine(text);
  if (!isJsonObject(value)) return { ok: false, position, reason: 'line is not a JSON object' };
  const { hash, ...body } = value;
  let computed: string;
  try {
    computed = sha256Hex(canonicalJson(body));
  } catch (err) {
    // canonicalJson refuses non-integer numbers: such a line was not written by a conforming writer.
    return { ok: false, position, reason: `line is not canonical-hashable (${String(err)})` };
  }
  if (hash !== computed) return { ok: false, position, reason: 'line hash does not match its content' };
  const parsed = ChainLineSchema.safeParse(value);
  if (!parsed.success) return { ok: false, position, reason: 'line lacks a field its kind needs' };
  return { ok: true, line: parsed.data as unknown as ChainLine, position };
}

export async function readChain(spanDir: string, run: string): Promise<ReadChain> {
  let text: string;
  try {
    text = await fsp.readFile(path.join(runDir(spanDir, run), CHAIN_FILE), 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return { exists: false, lines: [], tornBytes: 0, completeBytes: 0 };
    throw err;
  }
  const end = text.lastIndexOf('\n') + 1;
  const complete = text.slice(0, end);
  const lines = complete === '' ? [] : complete.slice(0, -1).split('\n');
  return {
    exists: true,
    lines: lines.map((l, i) => checkLine(l, i + 1)),
    tornBytes: Buffer.byteLength(text.slice(end)),
    completeBytes: Buffer.byteLength(complete),
  };
}

/** The head of a run: its last readable line. */
export interface ChainHead {
  run: string;
  seq: number;
  head: string;
  at: string;
}

export function headOf(run: string, chain: ReadChain): ChainHead | null {
  for (let i = chain.lines.length - 1; i >= 0; i -= 1) {
    const entry = chain.lines[i];
    if (entry?.ok === true) return { run, seq: entry.line.seq, head: entry.line.hash, at: entry.line.at };
  }
  return null;
}
