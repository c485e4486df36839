import * as path from 'node:path';

import { z } from 'zod';

import { replicaTag, resolveGuardianPaths, type GuardianPaths } from '@guardian/archive';
import { sidecarTarget } from '@guardian/client';

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
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
}

const blankToUndefined = (value: unknown): unknown =>
  typeof value === 'string' && value.trim() === '' ? undefined : value;

const EnvSchema = z.object({
  GUARDIAN_URL: z.preprocess(blankToUndefined, z.url().optional()),
  GUARDIAN_PORT: z.preprocess(blankToUndefined, z.coerce.number().int().min(1).max(65535).default(8786)),
  GUARDIAN_TOKEN: z.preprocess(blankToUndefined, z.string().optional()),
  GUARDIAN_CHARS_PER_TOKEN: z.preprocess(blankToUndefined, z.coerce.number().gt(0).default(3.5)),
  CG_CC_WINDOW: z.preprocess(blankToUndefined, z.coerce.number().int().positive().optional()),
  CLAUDE_CONFIG_DIR: z.preprocess(blankToUndefined, z.string().optional()),
  GUARDIAN_LOG_LEVEL: z.preprocess(
    blankToUndefined,
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ),
});

/** Validates the environment; a bad value throws a ZodError naming the variable. */
export function loadMcpConfig(
  env: Record<string, string | undefined>,
  home: string,
  now = new Date(),
  flagUrl?: string,
): McpConfig {
  const parsed = EnvSchema.parse(env);
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
