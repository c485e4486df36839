import { Command } from 'commander';

import { LocalArchive, Receipts, parseAge, replicaTag, type ArchiveSource } from '@guardian/archive';
import { GuardianClient, RemoteArchive, sidecarTarget } from '@guardian/client';

import { loadCliConfig, processIo, type CliConfig } from '../common/cli-config';
import { CliUsageError, handleCliError } from '../common/cli-error';
import { progress, type CliIo } from '../common/cli-io';
import type { ExitCode } from '../common/exit-codes';
import { logKeyCommand } from './log-key-command';
import { pruneCommand, reindexCommand, repairCommand, sealExistingCommand } from './maintenance-command';
import type { RecallContext } from './recall-context';
import {
  MAINTENANCE_MODES,
  RecallFlagsSchema,
  pickMode,
  type RecallFlags,
  type RecallMode,
} from './recall-options';
import { receiptsCommand, savingsCommand } from './report-command';
import { searchCommand } from './search-command';
import { headsCommand, verifyCommand } from './verify-command';

const NAME = 'context-guardian-recall';

function program(io: CliIo): Command {
  return new Command()
    .name(NAME)
    .description('Search, verify and account for the Context Guardian archive.')
    .argument('[term]', 'text to search for in the archived originals')
    .option('--run <run>', 'limit to one run')
    .option('--session <session>', 'limit to one session (hash, hash prefix or the raw session value)')
    .option('--max <n>', 'most hits to print', '20')
    .option('--json', 'print JSON')
    .option('--verify', "check every run and each writer's log: OK, or the first break and its kind")
    .option('--all', 'with --verify: every run (the default)')
    .option('--heads', "print each run's chain head")
    .option('--seal-existing', 'seal runs written before sealing existed (lines marked backfilled)')
    .option('--prune', 'remove whole runs older than GUARDIAN_RETENTION_DAYS')
    .option('--repair <run>', 'seal or quarantine the tail of a run torn by a crash')
    .option('--reindex', 'rebuild the digest index from the spans')
    .option('--receipts', 'add up the counts-only receipts')
    .option('--share', 'with --receipts: the five-line block to paste')
    .option('--savings', 'how much smaller the forwarded requests were')
    .option('--log-key', "print the verifier key of each writer's span log (Go note format)")
    .option('--since <age>', 'window for --receipts and --savings: 30m, 24h, 7d, 2w', '7d')
    .option(
      '--url <url>',
      'read through this sidecar (team mode; GUARDIAN_URL with GUARDIAN_TOKEN does the same), scoped to GUARDIAN_TOKEN',
    )
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
}

async function dispatch(mode: RecallMode, ctx: RecallContext, term: string | undefined): Promise<ExitCode> {
  switch (mode) {
    case 'search':
      return searchCommand(ctx, term ?? '');
    case 'verify':
      return verifyCommand(ctx);
    case 'heads':
      return headsCommand(ctx);
    case 'seal-existing':
      return sealExistingCommand(ctx);
    case 'prune':
      return pruneCommand(ctx);
    case 'repair':
      return repairCommand(ctx, ctx.flags.repair ?? '');
    case 'reindex':
      return reindexCommand(ctx);
    case 'receipts':
      return receiptsCommand(ctx);
    case 'log-key':
      return logKeyCommand(ctx);
    case 'savings':
      return savingsCommand(ctx);
  }
}

/** An archive read through the sidecar may take a while: each page of a seal check, a search that scans a volume. */
const REMOTE_TIMEOUT_MS = 60_000;

/**
 * The archive a reading mode uses: through the sidecar in team mode (ARCHITECTURE.md#access), else the local span folder, with
 * the counts-only receipts a recall leaves (the sidecar records its own). The maintenance modes change files, so
 * they always run on the local folder, and are refused with an explicit --url.
 */
function openArchive(
  io: CliIo,
  config: CliConfig,
  flags: RecallFlags,
  mode: RecallMode,
  replica: string,
): { archive: ArchiveSource; where: string } {
  const target = sidecarTarget(io.env, flags.url);
  if (MAINTENANCE_MODES.includes(mode)) {
    if (flags.url !== undefined)
      throw new CliUsageError(
        `--${mode} changes the archive: run it where the span folder is, without --url`,
      );
  } else if (target.remote) {
    const client = new GuardianClient({ url: target.url, token: target.token, timeoutMs: REMOTE_TIMEOUT_MS });
    return { archive: new RemoteArchive(client), where: target.url };
  }
  const archive = new LocalArchive({
    ...config,
    receipts: new Receipts({ receiptsDir: config.receiptsDir, replica, now: io.now }),
    now: io.now,
    onVerifyProgress: progress(io, 'verifying runs'),
    // Receipts never fail a recall (seed: fail open for every receipt write); said once on stderr.
    onReceiptError: (err) =>
      io.stderr.write(
        `${NAME}: warning: receipt not written (${err instanceof Error ? err.message : String(err)})\n`,
      ),
  });
  return { archive, where: config.spanDir };
}

/**
 * `context-guardian-recall`: parse (commander + zod), call the archive library, print human text or
 * `--json`, return the exit code (0 hits/OK, 1 no hits/break, 2 usage or no archive). Never throws.
 */
export async function main(argv: string[], io: CliIo = processIo()): Promise<number> {
  try {
    const cmd = program(io).parse(argv, { from: 'user' });
    const flags = RecallFlagsSchema.parse(cmd.opts());
    const term = cmd.args[0];
    const mode = pickMode(term, flags);
    // A bad AGE is a usage error before any file is read (seed: "a bad AGE exits 2").
    if (mode === 'receipts' || mode === 'savings') parseAge(flags.since);
    const config = loadCliConfig(io);
    for (const warning of config.warnings) io.stderr.write(`${NAME}: warning: ${warning}\n`);
    const replica = replicaTag(io.now());
    const { archive, where } = openArchive(io, config, flags, mode, replica);
    return await dispatch(mode, { io, config, flags, replica, archive, where }, term);
  } catch (err) {
    return handleCliError(err, io, NAME);
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
