import { CommanderError } from 'commander';
import { ZodError } from 'zod';

import { ArchiveError } from '@guardian/archive';
import { GuardianClientError } from '@guardian/client';
import { CodedError, codeOf } from '@guardian/errors';

import type { CliIo } from './cli-io';
import { EXIT, type ExitCode } from './exit-codes';

/** A usage error found after commander parsed the line (conflicting modes, missing term). */
export class CliUsageError extends CodedError<'CLI_USAGE'> {
  override readonly name = 'CliUsageError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('CLI_USAGE', message, options);
  }
}

/**
 * The one error handler of a CLI (HOUSE rule 12): prints `<name>: <code>: <message>` to stderr and returns the
 * exit code. Usage errors, bad ids and ages, and a missing archive exit 2; a chain that cannot be repaired
 * is a break (1); anything unexpected is reported the same way and exits 2 (never a stack trace on stdout).
 */
export function handleCliError(err: unknown, io: CliIo, name: string): ExitCode {
  if (err instanceof CommanderError) {
    // Commander already printed its message through configureOutput; --help and --version exit 0.
    return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  }
  if (err instanceof ZodError) {
    const issue = err.issues[0];
    io.stderr.write(
      `${name}: CLI_USAGE: ${issue?.path.join('.') ?? ''} ${issue?.message ?? 'invalid input'}\n`,
    );
    return EXIT.USAGE;
  }
  if (ArchiveError.is(err, 'ARCHIVE_CHAIN_BROKEN')) {
    io.stderr.write(`${name}: ${err.code}: ${err.message}\n`);
    return EXIT.NONE;
  }
  // Read through the sidecar, the archive answers the same codes (ARCHIVE_NOT_FOUND, ARCHIVE_BAD_ID...); a refused
  // token or an unreachable sidecar is a usage problem too: exit 2 with the reason.
  if (ArchiveError.is(err) || CliUsageError.is(err) || GuardianClientError.is(err)) {
    io.stderr.write(`${name}: ${err.code}: ${err.message}\n`);
    return EXIT.USAGE;
  }
  const code = codeOf(err) ?? 'CLI_FAILED';
  io.stderr.write(`${name}: ${code}: ${err instanceof Error ? err.message : String(err)}\n`);
  return EXIT.USAGE;
}
