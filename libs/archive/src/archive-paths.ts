import * as path from 'node:path';

import { ArchiveError } from './archive-error';

/** Where every tool finds the archive (ARCHITECTURE.md#files, ARCHITECTURE.md#configuration). */
export interface GuardianPaths {
  dataDir: string;
  spanDir: string;
  logDir: string;
  /** null when GUARDIAN_RECEIPTS=0 turns receipts off. */
  receiptsDir: string | null;
  /** null when no anchor folder is configured. */
  anchorDir: string | null;
  /**
   * Where `--verify` keeps the last checkpoint it verified of each log (docs/ARCHIVE_FORMAT.md#the-log): the
   * verifier's own state, outside the data folder, so it can show that a log was rolled back.
   */
  verifiedDir: string;
  /** Human-readable notes about legacy variables that were translated. */
  warnings: string[];
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/**
 * Resolves the archive folders from environment values. Pure: no fs, no process.env, so the sidecar, the
 * CLIs, the MCP server and the doctor all compute the same folders (ARCHITECTURE.md#files: "a laptop install finds
 * its own archive without configuration").
 */
export function resolveGuardianPaths(env: Record<string, string | undefined>, home: string): GuardianPaths {
  const warnings: string[] = [];
  const xdg = nonEmpty(env.XDG_DATA_HOME);
  const dataDir =
    nonEmpty(env.GUARDIAN_DATA_DIR) ??
    (xdg !== undefined
      ? path.join(xdg, 'context-guardian')
      : path.join(home, '.local', 'share', 'context-guardian'));
  const spanDir = nonEmpty(env.GUARDIAN_SPAN_DIR) ?? path.join(dataDir, 'spans');

  let logDir = nonEmpty(env.GUARDIAN_LOG_DIR);
  const legacyLog = nonEmpty(env.GUARDIAN_LOG_PATH);
  if (logDir === undefined && legacyLog !== undefined) {
    // The seed's GUARDIAN_LOG_PATH named one file; its folder now holds the per-replica logs
    // (ARCHITECTURE.md#configuration).
    logDir = path.dirname(legacyLog);
    warnings.push(`GUARDIAN_LOG_PATH is deprecated: using its folder ${logDir} as GUARDIAN_LOG_DIR`);
  }
  logDir ??= path.join(dataDir, 'log');

  const receiptsRaw = nonEmpty(env.GUARDIAN_RECEIPTS);
  const receiptsDir =
    receiptsRaw === '0' ? null : receiptsRaw !== undefined ? receiptsRaw : path.join(dataDir, 'receipts');

  let anchorDir: string | null = nonEmpty(env.GUARDIAN_SEAL_ANCHOR_DIR) ?? null;
  const legacyAnchor = nonEmpty(env.GUARDIAN_SEAL_ANCHOR_PATH);
  if (anchorDir === null && legacyAnchor !== undefined) {
    // The seed anchored every run in one file; anchors are now one file per run in a folder
    // (ARCHITECTURE.md#configuration).
    anchorDir = path.dirname(legacyAnchor);
    warnings.push(
      `GUARDIAN_SEAL_ANCHOR_PATH is deprecated: using its folder ${anchorDir} as GUARDIAN_SEAL_ANCHOR_DIR`,
    );
  }
  const state = nonEmpty(env.XDG_STATE_HOME) ?? path.join(home, '.local', 'state');
  const verifiedDir = nonEmpty(env.GUARDIAN_VERIFIED_DIR) ?? path.join(state, 'context-guardian', 'verified');
  return { dataDir, spanDir, logDir, receiptsDir, anchorDir, verifiedDir, warnings };
}

const RUN_ID = /^[A-Za-z0-9_-]{1,80}$/;

/** Throws ARCHIVE_BAD_ID unless `run` is a safe run id (no path traversal; ARCHITECTURE.md#files). */
export function assertRunId(run: string): string {
  if (!RUN_ID.test(run)) {
    throw new ArchiveError('ARCHIVE_BAD_ID', 'run id must match ^[A-Za-z0-9_-]{1,80}$');
  }
  return run;
}

/** Throws ARCHIVE_BAD_ID unless `span` is a non-negative safe integer. */
export function assertSpanNumber(span: number): number {
  if (!Number.isSafeInteger(span) || span < 0) {
    throw new ArchiveError('ARCHIVE_BAD_ID', 'span number must be a non-negative integer');
  }
  return span;
}

/** `0001.json`; past 9999 the number just grows (`10000.json`). */
export function spanFileName(span: number): string {
  return `${String(span).padStart(4, '0')}.json`;
}

/** `journal-0001.jsonl` (closed) or `journal-0001.open.jsonl` (being written). */
export function journalFileName(segment: number, open: boolean): string {
  return `journal-${String(segment).padStart(4, '0')}${open ? '.open' : ''}.jsonl`;
}

export const SPAN_FILE = /^(\d{4,})\.json$/;
export const JOURNAL_FILE = /^journal-(\d{4,})\.jsonl$/;
export const OPEN_JOURNAL_FILE = /^journal-(\d{4,})\.open\.jsonl$/;
export const TEMP_FILE = /^\..*\.tmp$/;
export const CHAIN_FILE = 'chain.jsonl';
export const INDEX_FILE = 'index.jsonl';
export const RUN_FILE = 'run.json';
export const QUARANTINE_DIR = 'quarantine';

/** Absolute folder of a validated run. */
export function runDir(spanDir: string, run: string): string {
  return path.join(spanDir, assertRunId(run));
}
