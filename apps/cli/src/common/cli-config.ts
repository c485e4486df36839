import * as os from 'node:os';

import { z } from 'zod';

import { resolveGuardianPaths, type GuardianPaths } from '@guardian/archive';

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

const CountSchema = z.string().trim().regex(/^\d+$/, 'expected a whole number').transform(Number).optional();

const CliEnvSchema = z.object({
  GUARDIAN_KEEP_SPANS: CountSchema,
  GUARDIAN_RETENTION_DAYS: CountSchema,
});

/** Archive folders plus the numbers the recall CLI needs (CONTRACTS §4, §7). */
export interface CliConfig extends GuardianPaths {
  keepSpans: number;
  retentionDays: number;
}

/** Validates the environment once; a bad value is a usage error (exit 2) naming the variable. */
export function loadCliConfig(io: CliIo): CliConfig {
  const parsed = CliEnvSchema.parse({
    GUARDIAN_KEEP_SPANS: io.env.GUARDIAN_KEEP_SPANS || undefined,
    GUARDIAN_RETENTION_DAYS: io.env.GUARDIAN_RETENTION_DAYS || undefined,
  });
  return {
    ...resolveGuardianPaths(io.env, io.home),
    keepSpans: parsed.GUARDIAN_KEEP_SPANS ?? 500,
    retentionDays: parsed.GUARDIAN_RETENTION_DAYS ?? 0,
  };
}
