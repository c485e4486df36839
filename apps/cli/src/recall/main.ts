import { Command } from 'commander';

import { parseAge, replicaTag } from '@guardian/archive';

import { loadCliConfig, processIo } from '../common/cli-config';
import { handleCliError } from '../common/cli-error';
import type { CliIo } from '../common/cli-io';
import type { ExitCode } from '../common/exit-codes';
import { pruneCommand, reindexCommand, repairCommand, sealExistingCommand } from './maintenance-command';
import type { RecallContext } from './recall-context';
import { RecallFlagsSchema, pickMode, type RecallMode } from './recall-options';
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
    .option('--verify', 'check every run: OK, or the first break and its kind')
    .option('--all', 'with --verify: every run (the default)')
    .option('--heads', "print each run's chain head")
    .option('--seal-existing', 'seal runs written before sealing existed (lines marked backfilled)')
    .option('--prune', 'remove whole runs older than GUARDIAN_RETENTION_DAYS')
    .option('--repair <run>', 'seal or quarantine the tail of a run torn by a crash')
    .option('--reindex', 'rebuild the digest index from the spans')
    .option('--receipts', 'add up the counts-only receipts')
    .option('--share', 'with --receipts: the five-line block to paste')
    .option('--savings', 'how much smaller the forwarded requests were')
    .option('--since <age>', 'window for --receipts and --savings: 30m, 24h, 7d, 2w', '7d')
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
    case 'savings':
      return savingsCommand(ctx);
  }
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
    return await dispatch(mode, { io, config, flags, replica: replicaTag(io.now()) }, term);
  } catch (err) {
    return handleCliError(err, io, NAME);
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
