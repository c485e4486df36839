import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { codeOf } from '@guardian/errors';

import { readLedgers, type HookLedger } from './cc-ledger';

/** How full Claude Code's window looks (seed: get_context_status). */
export interface ContextStatus {
  state: 'ok' | 'high' | 'critical' | 'unknown';
  used_tokens: number | null;
  window: number | null;
  window_source: 'CG_CC_WINDOW' | 'model' | 'default' | null;
  pct: number | null;
  model: string | null;
  /** The transcript's file name (never its folder: the home folder stays out of the prompt). */
  transcript: string | null;
  /** Bytes counted: those after the last compaction boundary, or the whole file. */
  bytes_counted: number | null;
  /** Where the counted bytes start: the hook's last PreCompact, Claude Code's compact_boundary line, or none. */
  boundary: 'precompact' | 'compact_boundary' | 'none' | null;
  compacted: boolean;
  /** Why the state is unknown. */
  reason: string | null;
}

export interface ContextStatusOptions {
  transcriptPath?: string;
  /** The Claude Code hook's ledgers: the newest capture names the transcript when no path is given. */
  ledgerDir: string;
  /** Searched for the newest transcript when no path is given and the hook never ran. */
  projectsDir: string;
  charsPerToken: number;
  ccWindow?: number;
}

const DEFAULT_WINDOW = 200000;
// The seed's "small table keyed on the transcript's model": Claude models have a 200k window unless the
// model id names the 1M-context variant.
const MODEL_WINDOWS: { pattern: RegExp; window: number }[] = [
  { pattern: /\[1m\]|-1m\b/i, window: 1_000_000 },
  { pattern: /^claude-/i, window: 200000 },
];
const HIGH = 70;
const CRITICAL = 90;
// Claude Code writes a system line with this subtype where a compaction cut the window.
const BOUNDARY = 'compact_boundary';

/** Never throws: a missing or unreadable transcript is `unknown` with a reason. */
export async function contextStatus(opts: ContextStatusOptions): Promise<ContextStatus> {
  let ledgers: HookLedger[];
  let file: string | null;
  try {
    ledgers = await readLedgers(opts.ledgerDir);
    // Seed: "Omit transcript_path to use the newest run the Claude Code hook captured."
    file = opts.transcriptPath ?? ledgers[0]?.transcriptPath ?? (await newestTranscript(opts.projectsDir));
  } catch (err: unknown) {
    return unknown(null, `Claude Code folders not readable (${errCode(err)})`);
  }
  if (file === null) return unknown(null, 'no Claude Code transcript found; pass transcript_path');
  let bytes: Buffer;
  try {
    bytes = await fsp.readFile(file);
  } catch (err: unknown) {
    return unknown(path.basename(file), `transcript not readable (${errCode(err)})`);
  }
  // The later of the two marks starts the current window: the hook's offset at the last PreCompact, or the
  // compact_boundary line Claude Code writes after it. An offset past the end belongs to a replaced file.
  const resolved = path.resolve(file);
  const marks = ledgers.find((l) => path.resolve(l.transcriptPath) === resolved)?.precompactOffsets ?? [];
  const precompact = Math.max(0, ...marks.filter((m) => m <= bytes.length));
  const boundaryLine = lastBoundaryEnd(bytes);
  const start = Math.max(precompact, boundaryLine);
  const counted = bytes.length - start;
  const model = lastModel(bytes);
  const { window, source } = windowFor(model, opts.ccWindow);
  const used = Math.ceil(counted / opts.charsPerToken);
  const pct = Math.round((used / window) * 1000) / 10;
  return {
    state: pct >= CRITICAL ? 'critical' : pct >= HIGH ? 'high' : 'ok',
    used_tokens: used,
    window,
    window_source: source,
    pct,
    model,
    transcript: path.basename(file),
    bytes_counted: counted,
    boundary: start === 0 ? 'none' : boundaryLine >= precompact ? 'compact_boundary' : 'precompact',
    compacted: start > 0,
    reason: null,
  };
}

function unknown(transcript: string | null, reason: string): ContextStatus {
  return {
    state: 'unknown',
    used_tokens: null,
    window: null,
    window_source: null,
    pct: null,
    model: null,
    transcript,
    bytes_counted: null,
    boundary: null,
    compacted: false,
    reason,
  };
}

// codeOf is a structural test, not instanceof: fs errors may come from another realm (jest's vm context).
function errCode(err: unknown): string {
  return codeOf(err) ?? 'error';
}

function windowFor(
  model: string | null,
  ccWindow: number | undefined,
): { window: number; source: NonNullable<ContextStatus['window_source']> } {
  if (ccWindow !== undefined) return { window: ccWindow, source: 'CG_CC_WINDOW' };
  const hit = model === null ? undefined : MODEL_WINDOWS.find((m) => m.pattern.test(model));
  return hit === undefined
    ? { window: DEFAULT_WINDOW, source: 'default' }
    : { window: hit.window, source: 'model' };
}

/** Parses one JSONL line; a line that is not JSON (a write cut mid-line) counts as no record. */
function record(line: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    // Claude Code may be writing this line right now; its bytes still count, its fields are unknown.
    return null;
  }
}

/** Byte offset just past the last compact boundary line, or 0 when the transcript was never compacted. */
function lastBoundaryEnd(bytes: Buffer): number {
  let end = bytes.length;
  while (end > 0) {
    const start = bytes.lastIndexOf(0x0a, end - 1) + 1;
    const line = bytes.subarray(start, end);
    // Cheap byte test first: only lines naming the subtype are parsed.
    if (line.includes(BOUNDARY)) {
      const rec = record(line.toString('utf8'));
      if (rec?.subtype === BOUNDARY) return Math.min(bytes.length, end + 1);
    }
    end = start - 1;
  }
  return 0;
}

/** The model of the newest assistant line (`message.model`), searched from the end. */
function lastModel(bytes: Buffer): string | null {
  let end = bytes.length;
  while (end > 0) {
    const start = bytes.lastIndexOf(0x0a, end - 1) + 1;
    const line = bytes.subarray(start, end);
    if (line.includes('"model"')) {
      const message = record(line.toString('utf8'))?.message;
      if (typeof message === 'object' && message !== null && 'model' in message) {
        const model = message.model;
        if (typeof model === 'string' && model !== '' && model !== '<synthetic>') return model;
      }
    }
    end = start - 1;
  }
  return null;
}

/** The most recently written `<projects>/<project>/<session>.jsonl`, or null when there is none. */
async function newestTranscript(projectsDir: string): Promise<string | null> {
  let projects;
  try {
    projects = await fsp.readdir(projectsDir, { withFileTypes: true });
  } catch (err: unknown) {
    if (errCode(err) === 'ENOENT') return null;
    throw err;
  }
  let best: { file: string; mtime: number } | null = null;
  for (const project of projects) {
    if (!project.isDirectory()) continue;
    const dir = path.join(projectsDir, project.name);
    for (const name of await fsp.readdir(dir)) {
      if (!name.endsWith('.jsonl')) continue;
      const stat = await fsp.stat(path.join(dir, name));
      if (best === null || stat.mtimeMs > best.mtime)
        best = { file: path.join(dir, name), mtime: stat.mtimeMs };
    }
  }
  return best?.file ?? null;
}
