import * as path from 'node:path';

import type { CliIo } from '../common/cli-io';

/** What the Claude Code commands need beyond the other CLIs: the hook payload on stdin and the cwd. */
export interface HookIo extends CliIo {
  readStdin: () => Promise<string>;
  cwd: () => string;
}

/** Folders and files the adapter keeps under the data dir (ARCHITECTURE.md#files: one data dir for every tool). */
export interface CcPaths {
  root: string;
  /** One ledger per captured session: `<sha256>.json` (offset, transcript path, runs). */
  sessionsDir: string;
  /** Pre-compaction snapshots: `<sha256>.json`, 0600, 10-minute TTL. */
  snapshotsDir: string;
  /** Problems the hooks met; codes and counts only, never transcript text. */
  logFile: string;
}

export function ccPaths(dataDir: string): CcPaths {
  const root = path.join(dataDir, 'claude-code');
  return {
    root,
    sessionsDir: path.join(root, 'sessions'),
    snapshotsDir: path.join(root, 'snapshots'),
    logFile: path.join(root, 'hooks.log'),
  };
}

/** Capture runs are `cc-<session hash 12>-<replica>` (ARCHITECTURE.md#files). */
export function captureRunName(sessionHash: string, replica: string): string {
  return `cc-${sessionHash.slice(0, 12)}-${replica}`;
}
