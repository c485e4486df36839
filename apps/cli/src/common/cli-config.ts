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
  GUARDIAN_COST_PER_1M_INPUT_USD: z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?$/, 'expected a price like 0.15')
    .transform(Number)
    .optional(),
});

/** Archive folders plus the numbers the recall CLI needs (ARCHITECTURE.md#files, ARCHITECTURE.md#configuration). */
export interface CliConfig extends GuardianPaths {
  keepSpans: number;
  retentionDays: number;
  /** Price of a million input tokens, for the savings figure; 0 leaves money out. */
  costPer1MInputUsd?: number;
}

/** Validates the environment once; a bad value is a usage error (exit 2) naming the variable. */
export function loadCliConfig(io: CliIo): CliConfig {
  const parsed = CliEnvSchema.parse({
    GUARDIAN_KEEP_SPANS: io.env.GUARDIAN_KEEP_SPANS || undefined,
    GUARDIAN_RETENTION_DAYS: io.env.GUARDIAN_RETENTION_DAYS || undefined,
    GUARDIAN_COST_PER_1M_INPUT_USD: io.env.GUARDIAN_COST_PER_1M_INPUT_USD || undefined,
  });
  return {
    ...resolveGuardianPaths(io.env, io.home),
    keepSpans: parsed.GUARDIAN_KEEP_SPANS ?? 500,
    retentionDays: parsed.GUARDIAN_RETENTION_DAYS ?? 0,
    costPer1MInputUsd: parsed.GUARDIAN_COST_PER_1M_INPUT_USD ?? 0,
  };
}
