import * as path from 'node:path';

import { z } from 'zod';

import { replicaTag, resolveGuardianPaths, type GuardianPaths } from '@guardian/archive';
import { sidecarTarget } from '@guardian/client';
import { parseToolEnv, type LogLevel } from '@guardian/config';

/** What the MCP server reads from its environment, validated once at start (HOUSE rule 2). */
export interface McpConfig {
  paths: GuardianPaths;
  /**
   * The sidecar's base URL: `--url`, else GUARDIAN_URL, else http://127.0.0.1:$GUARDIAN_PORT (ARCHITECTURE.md#access,
   * ARCHITECTURE.md#configuration).
   */
  proxyUrl: string;
  /** Sent as X-Guardian-Token, never logged (ARCHITECTURE.md#access). */
  token: string | undefined;
  /** Team mode: the archive tools read through the sidecar (`--url`, or GUARDIAN_URL with GUARDIAN_TOKEN). */
  remote: boolean;
  /** GUARDIAN_CHARS_PER_TOKEN, the sidecar's own estimate ratio (seed: get_context_status). */
  charsPerToken: number;
  /** CG_CC_WINDOW: Claude Code's window when set. */
  ccWindow: number | undefined;
  /** Where Claude Code keeps its transcripts: $CLAUDE_CONFIG_DIR or ~/.claude, then `projects/`. */
  claudeProjectsDir: string;
  /** This process's replica tag for receipt file names (ARCHITECTURE.md#files). */
  replica: string;
  logLevel: LogLevel;
}

const blankToUndefined = (value: unknown): unknown =>
  typeof value === 'string' && value.trim() === '' ? undefined : value;

/** What only the tools read; the variables shared with the sidecar come from its schema (libs/config). */
const EnvSchema = z.object({
  GUARDIAN_URL: z.preprocess(blankToUndefined, z.url().optional()),
  GUARDIAN_TOKEN: z.preprocess(blankToUndefined, z.string().optional()),
  CG_CC_WINDOW: z.preprocess(blankToUndefined, z.coerce.number().int().positive().optional()),
  CLAUDE_CONFIG_DIR: z.preprocess(blankToUndefined, z.string().optional()),
});

/** Validates the environment; a bad value throws a ZodError naming the variable. */
export function loadMcpConfig(
  env: Record<string, string | undefined>,
  home: string,
  now = new Date(),
  flagUrl?: string,
): McpConfig {
  const parsed = {
    ...EnvSchema.parse(env),
    ...parseToolEnv(env, ['GUARDIAN_PORT', 'GUARDIAN_CHARS_PER_TOKEN', 'GUARDIAN_LOG_LEVEL']),
  };
  if (flagUrl !== undefined) z.url().parse(flagUrl);
  const target = sidecarTarget(
    { ...env, GUARDIAN_URL: parsed.GUARDIAN_URL, GUARDIAN_PORT: String(parsed.GUARDIAN_PORT) },
    flagUrl,
  );
  return {
    paths: resolveGuardianPaths(env, home),
    proxyUrl: target.url.replace(/\/+$/, ''),
    token: target.token,
    remote: target.remote,
    charsPerToken: parsed.GUARDIAN_CHARS_PER_TOKEN,
    ccWindow: parsed.CG_CC_WINDOW,
    claudeProjectsDir: path.join(parsed.CLAUDE_CONFIG_DIR ?? path.join(home, '.claude'), 'projects'),
    replica: replicaTag(now),
    logLevel: parsed.GUARDIAN_LOG_LEVEL,
  };
}
