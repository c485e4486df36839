import { Command } from 'commander';

import { LocalArchive, resolveGuardianPaths } from '@guardian/archive';
import { GuardianClient, RemoteArchive, sidecarTarget } from '@guardian/client';

import { processIo } from '../common/cli-config';
import { parseTimeoutSeconds } from '../common/cli-options';
import { handleCliError } from '../common/cli-error';
import { printJson, progress, type CliIo } from '../common/cli-io';
import { EXIT, type ExitCode } from '../common/exit-codes';
import { renderCheck, skip, type CheckResult } from './doctor-check';
import { checkArchive, checkDataDir, checkNode } from './local-checks';
import { checkSidecar } from './sidecar-checks';

// context-guardian-doctor: checks the install and a running sidecar, one line per check and a `fix:` line
// under anything wrong. Like the other CLIs it boots no Nest (HOUSE layout: apps/cli starts fast).

const NAME = 'context-guardian-doctor';

interface Options {
  url?: string;
  timeout: number;
  json: boolean;
}

/** Runs every check; resolves to 0 when nothing failed, 1 when something did, 2 on a usage error. */
export async function main(argv: string[], io: CliIo = processIo()): Promise<ExitCode> {
  try {
    const opts = program(io).parse(argv, { from: 'user' }).opts<Options>();
    const target = sidecarTarget(io.env, opts.url);
    const checks = await runChecks(io, opts, target);
    const failed = checks.some((c) => c.status === 'fail');
    if (opts.json) printJson(io, { ok: !failed, url: target.url, checks });
    else
      io.stdout.write(
        `${checks.map(renderCheck).join('\n')}\n${failed ? 'something needs fixing' : 'all good'}\n`,
      );
    return failed ? EXIT.NONE : EXIT.OK;
  } catch (err: unknown) {
    return handleCliError(err, io, NAME);
  }
}

async function runChecks(
  io: CliIo,
  opts: Options,
  target: ReturnType<typeof sidecarTarget>,
): Promise<CheckResult[]> {
  const paths = resolveGuardianPaths(io.env, io.home);
  const timeoutMs = Math.round(opts.timeout * 1000);
  return [
    checkNode(process.versions.node),
    ...(await checkDataDir(paths)),
    ...(await checkSidecar({ url: target.url, token: target.token, timeoutMs })),
    await archiveCheck(io, target, paths, timeoutMs),
  ];
}

/** Team mode verifies the caller's runs through the sidecar; otherwise the local span folder (ARCHITECTURE.md#access). */
async function archiveCheck(
  io: CliIo,
  target: ReturnType<typeof sidecarTarget>,
  paths: ReturnType<typeof resolveGuardianPaths>,
  timeoutMs: number,
): Promise<CheckResult> {
  if (!target.remote) {
    const local = new LocalArchive({ ...paths, onVerifyProgress: progress(io, 'verifying') });
    return checkArchive(local, paths.spanDir);
  }
  let client: GuardianClient;
  try {
    // A seal check over many runs takes longer than one answer: a page per call, each within ten times the wait.
    client = new GuardianClient({ url: target.url, token: target.token, timeoutMs: timeoutMs * 10 });
  } catch {
    // The sidecar check above already failed on this URL and said how to fix it.
    return skip('archive', 'needs a sidecar URL');
  }
  return checkArchive(new RemoteArchive(client), `${target.url} (through the sidecar)`);
}

function program(io: CliIo): Command {
  return new Command()
    .name(NAME)
    .description('Check the install and a running sidecar; prints a fix for anything wrong.')
    .option(
      '--url <url>',
      'sidecar base URL (default GUARDIAN_URL, else http://127.0.0.1:$GUARDIAN_PORT); with it, the archive is checked through the sidecar',
    )
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
