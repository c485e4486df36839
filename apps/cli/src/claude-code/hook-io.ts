import { createHash } from 'node:crypto';
import * as os from 'node:os';
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

/** This process's replica tag (ARCHITECTURE.md#files): first 8 hex of sha256(hostname, pid, start time). */
export function replicaTag(now: Date): string {
  return createHash('sha256')
    .update(`${os.hostname()}\n${process.pid}\n${now.toISOString()}`)
    .digest('hex')
    .slice(0, 8);
}

/** Capture runs are `cc-<session hash 12>-<replica>` (ARCHITECTURE.md#files). */
export function captureRunName(sessionHash: string, replica: string): string {
  return `cc-${sessionHash.slice(0, 12)}-${replica}`;
}
