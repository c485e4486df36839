import { ArchiveError } from '@guardian/archive';
import { computeBudget } from '@guardian/compaction';
import { createLogger, packageVersion, startOtelSdk } from '@guardian/telemetry';
import { codeOf } from '@guardian/errors';

import { TokensFileError } from './access/token-file';
import { startGuardian, type RunningGuardian } from './bootstrap';
import { ConfigError, GuardianConfig } from './config/guardian-config';

/** Boots the sidecar from the environment; exits 1 with a clear message when the configuration is invalid. */
async function main(): Promise<void> {
  let config: GuardianConfig;
  try {
    config = GuardianConfig.fromEnv(process.env, { version: packageVersion() });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`context-guardian: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const { compaction, proxy } = config;
  const logger = createLogger({ level: config.env.GUARDIAN_LOG_LEVEL, name: 'context-guardian' });
  for (const w of config.warnings) logger.warn({}, w);
  const otel = await startOtelSdk(process.env);
  let running: RunningGuardian;
  try {
    running = await startGuardian(config, logger);
  } catch (err) {
    if (ArchiveError.is(err, 'ARCHIVE_LOG_KEY_UNUSABLE')) {
      // The path and why, never the key.
      process.stderr.write(`context-guardian: GUARDIAN_LOG_KEY_FILE cannot be used: ${err.message}\n`);
      process.exit(1);
    }
    if (err instanceof TokensFileError) {
      // Named without its content: the file holds the tokens.
      process.stderr.write(`context-guardian: GUARDIAN_TOKENS_FILE cannot be used: ${err.message}\n`);
      process.exit(1);
    }
    const why = listenFailure(err);
    if (why === undefined) throw err;
    // One line an operator can act on, not a stack (issue 12 defect 8).
    process.stderr.write(`context-guardian: cannot listen on ${proxy.host}:${proxy.port}: ${why}\n`);
    process.exit(1);
  }
  const dashboard = config.dashboardUrlFor(Number(new URL(running.url).port));

  const window = compaction.window;
  const budget = window
    ? computeBudget(window, compaction.threshold, compaction.reserveOutput).budget
    : undefined;
  const keep =
    compaction.keepRecent.messages !== undefined
      ? `last ${compaction.keepRecent.messages} messages`
      : `${Math.round(compaction.keepRecent.fraction * 100)}% of (window - reserve), at least 4 messages`;
  logger.info(
    {
      version: config.version,
      upstream: config.upstream.shown,
      window: window ?? 'detected per model',
      budget: budget ?? 'per model',
      keepRecent: keep,
      dashboard,
      replica: running.runtime.replica,
    },
    `context-guardian ${config.version} on ${running.url} -> ${config.upstream.shown}; window ${window ?? 'detected per model'}, budget ${budget ?? `${compaction.threshold} x window (min window - ${compaction.reserveOutput})`}, keep recent: ${keep}; dashboard ${dashboard}`,
  );

  const shutdown = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    await running.shutdown();
    await otel?.shutdown();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

/** Why the bind failed, in words, for the errors an operator causes by configuration; else undefined. */
function listenFailure(err: unknown): string | undefined {
  const code = codeOf(err) ?? '';
  if (code === 'EADDRINUSE')
    return 'the address is in use; set GUARDIAN_PORT to a free port or stop what holds it';
  if (code === 'EACCES')
    return 'permission denied; ports below 1024 need privileges, choose another GUARDIAN_PORT';
  if (code === 'EADDRNOTAVAIL') return 'no such address on this machine; check GUARDIAN_HOST';
  return undefined;
}

void main();
