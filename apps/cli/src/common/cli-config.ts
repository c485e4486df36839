import * as os from 'node:os';

import { resolveGuardianPaths, type GuardianPaths } from '@guardian/archive';
import { parseToolEnv } from '@guardian/config';

import type { CliIo } from './cli-io';

/** The one place the CLIs read process.env and the home folder (HOUSE rule 2). */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    home: os.homedir(),
    now: () => new Date(),
  };
}

/** Archive folders plus the numbers the recall CLI needs (ARCHITECTURE.md#files, ARCHITECTURE.md#configuration). */
export interface CliConfig extends GuardianPaths {
  keepSpans: number;
  retentionDays: number;
  /** Price of a million input tokens, for the savings figure; 0 leaves money out. */
  costPer1MInputUsd?: number;
  /** Price of a million output tokens (completions and summaries), for the spend; 0 leaves it out. */
  costPer1MOutputUsd?: number;
  /** GUARDIAN_LOG_ORIGIN and GUARDIAN_LOG_KEY_FILE: the local capture's log (issue 29), as the sidecar's. */
  logOrigin?: string;
  logKeyFile?: string;
}

/**
 * Validates the environment once, by the sidecar's own rules and defaults (libs/config); a bad value is a usage error
 * (exit 2) naming the variable.
 */
export function loadCliConfig(io: CliIo): CliConfig {
  const parsed = parseToolEnv(io.env, [
    'GUARDIAN_KEEP_SPANS',
    'GUARDIAN_RETENTION_DAYS',
    'GUARDIAN_COST_PER_1M_INPUT_USD',
    'GUARDIAN_COST_PER_1M_OUTPUT_USD',
    'GUARDIAN_LOG_ORIGIN',
    'GUARDIAN_LOG_KEY_FILE',
  ]);
  return {
    ...resolveGuardianPaths(io.env, io.home),
    keepSpans: parsed.GUARDIAN_KEEP_SPANS,
    retentionDays: parsed.GUARDIAN_RETENTION_DAYS,
    costPer1MInputUsd: parsed.GUARDIAN_COST_PER_1M_INPUT_USD,
    costPer1MOutputUsd: parsed.GUARDIAN_COST_PER_1M_OUTPUT_USD,
    logOrigin: parsed.GUARDIAN_LOG_ORIGIN,
    logKeyFile: parsed.GUARDIAN_LOG_KEY_FILE,
  };
}
