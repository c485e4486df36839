import { Command } from 'commander';

import { resolveGuardianPaths } from '@guardian/archive';
import { sidecarUrl } from '@guardian/config';

import { processIo } from '../common/cli-config';
import { parseTimeoutSeconds } from '../common/cli-options';
import { handleCliError } from '../common/cli-error';
import { printJson, progress, type CliIo } from '../common/cli-io';
import { EXIT, type ExitCode } from '../common/exit-codes';
import { renderCheck, type CheckResult } from './doctor-check';
import { checkArchive, checkDataDir, checkNode } from './local-checks';
import { checkSidecar } from './sidecar-checks';

// context-guardian-doctor: checks the install and a running sidecar, one line per check and a `fix:` line
// under anything wrong. Like the other CLIs it boots no Nest (HOUSE layout: apps/cli starts fast).

const NAME = 'context-guardian-doctor';

interface Options {
  url: string;
  timeout: number;
  json: boolean;
}

/** Runs every check; resolves to 0 when nothing failed, 1 when something did, 2 on a usage error. */
export async function main(argv: string[], io: CliIo = processIo()): Promise<ExitCode> {
  try {
    const opts = program(io).parse(argv, { from: 'user' }).opts<Options>();
    const checks = await runChecks(io, opts);
    const failed = checks.some((c) => c.status === 'fail');
    if (opts.json) printJson(io, { ok: !failed, url: opts.url, checks });
    else
      io.stdout.write(
        `${checks.map(renderCheck).join('\n')}\n${failed ? 'something needs fixing' : 'all good'}\n`,
      );
    return failed ? EXIT.NONE : EXIT.OK;
  } catch (err: unknown) {
    return handleCliError(err, io, NAME);
  }
}

async function runChecks(io: CliIo, opts: Options): Promise<CheckResult[]> {
  const paths = resolveGuardianPaths(io.env, io.home);
  const token = io.env.GUARDIAN_TOKEN?.trim() || undefined;
  return [
    checkNode(process.versions.node),
    ...(await checkDataDir(paths)),
    ...(await checkSidecar({ url: opts.url, token, timeoutMs: Math.round(opts.timeout * 1000) })),
    await checkArchive(paths, progress(io, 'verifying')),
  ];
}

function program(io: CliIo): Command {
  return new Command()
    .name(NAME)
    .description('Check the install and a running sidecar; prints a fix for anything wrong.')
    .option('--url <url>', 'sidecar base URL (GUARDIAN_URL)', sidecarUrl(io.env))
    .option('--timeout <seconds>', 'wait this long for each answer', parseTimeoutSeconds, 3)
    .option('--json', 'print the checks as JSON', false)
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
