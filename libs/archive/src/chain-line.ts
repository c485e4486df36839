import { canonicalJson, sha256Hex, type JsonValue } from './canonical-json';

export const GENESIS_PREV = '0'.repeat(64);

/** What a chain line records (docs/ARCHIVE_FORMAT.md §"Chain lines"). */
type ChainKind = 'span' | 'journal' | 'prune' | 'repair';
type RepairAction = 'sealed' | 'quarantined' | 'truncated';

/** A chain line before its `hash` is computed. */
export interface ChainBody {
  v: 1;
  seq: number;
  kind: ChainKind;
  prev: string;
  at: string;
  /** span, journal, repair: the file named, relative to the run folder. */
  file?: string;
  sha256?: string;
  size?: number;
  /** prune: the span files about to be deleted. */
  files?: string[];
  /** repair: what was done to `file`. */
  action?: RepairAction;
  /** repair quarantined: where the file now lives. */
  to?: string;
  /** repair truncated: bytes of a partial last line removed from chain.jsonl. */
  bytes?: number;
  /** sealed by --seal-existing, after the fact. */
  backfilled?: true;
  /** span: the log (`.tlog/<name>`) whose writer owes it an entry (issue 29; absent: written without a log). */
  log?: string;
}

export interface ChainLine extends ChainBody {
  hash: string;
}

function toJson(body: ChainBody): JsonValue {
  const out: { [key: string]: JsonValue } = {};
  for (const [key, value] of Object.entries(body)) {
    if (value !== undefined) out[key] = value as JsonValue;
  }
  return out;
}

/** sha256 over the canonical JSON of the line without `hash`. */
function chainHash(body: ChainBody): string {
  return sha256Hex(canonicalJson(toJson(body)));
}

/** The full line, hash included, as written to chain.jsonl (canonical JSON plus `\n`). */
export function sealLine(body: ChainBody): { line: ChainLine; text: string } {
  const line: ChainLine = { ...body, hash: chainHash(body) };
  return { line, text: `${canonicalJson(toJson(line))}\n` };
}

/** Anchor line `{head, seq}` (canonical JSON plus `\n`). */
export function anchorLineText(seq: number, head: string): string {
  return `${canonicalJson({ head, seq })}\n`;
}
