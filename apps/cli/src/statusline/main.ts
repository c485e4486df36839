import { Command, CommanderError, Option } from 'commander';
import { codeOf } from '@guardian/errors';

import { parseTimeoutSeconds } from '../common/cli-options';
import { statuslineDefaults } from './config';
import { fetchUsage } from './usage-client';
import { UNKNOWN_LINE, usageLine } from './usage-line';

// context-guardian-statusline: one line from /guardian/usage for a client's status bar (issue 6 item 6).
// It runs on every prompt, so it imports node:* and commander only: no Nest, no prom-client, no zod.

const FORMATS = ['claude', 'opencode', 'plain'] as const;

/** Streams and environment the status line uses; tests pass their own. */
export interface StatuslineIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean; destroy?: () => unknown };
  env?: NodeJS.ProcessEnv;
}

interface Options {
  url: string;
  session?: string;
  timeout: number;
  format: (typeof FORMATS)[number];
}

/** Prints the usage line and resolves to the exit code: 0, or 1 after printing `ctx ?`. */
export async function main(argv: string[], io: StatuslineIo = processIo()): Promise<number> {
  const defaults = statuslineDefaults(io.env);
  let opts: Options;
  try {
    opts = program(defaults.url, io).parse(argv, { from: 'user' }).opts<Options>();
  } catch (err: unknown) {
    // --help and --version end here with exit code 0; a bad option has already printed its message.
    if (err instanceof CommanderError && err.exitCode === 0) return 0;
    io.stdout.write(`${UNKNOWN_LINE}\n`);
    return 1;
  }
  const drained = opts.format === 'claude' ? drainStdin(io.stdin) : undefined;
  try {
    const usage = await fetchUsage({
      url: opts.url,
      session: opts.session,
      token: defaults.token,
      timeoutMs: Math.round(opts.timeout * 1000),
    });
    io.stdout.write(`${usageLine(usage)}\n`);
    return 0;
  } catch (err: unknown) {
    // Every failure is the same line to the status bar (seed); a person at a terminal also sees why.
    if (io.stderr.isTTY === true) io.stderr.write(`context-guardian-statusline: ${describe(err)}\n`);
    io.stdout.write(`${UNKNOWN_LINE}\n`);
    return 1;
  } finally {
    drained?.();
  }
}

function program(defaultUrl: string, io: StatuslineIo): Command {
  return new Command()
    .name('context-guardian-statusline')
    .description("Print the context window fill guardian forwarded, e.g. 'ctx 40% (12.9k/32k) est'.")
    .option('--url <url>', 'sidecar base URL (GUARDIAN_URL)', defaultUrl)
    .option('--session <id>', 'session id, the value your client sends as X-Guardian-Session')
    .option('--timeout <seconds>', 'give up after this many seconds', parseTimeoutSeconds, 2)
    .addOption(new Option('--format <caller>', 'who runs the line').choices(FORMATS).default('plain'))
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
}

// Claude Code pipes a JSON description of the session into the command; it is read and ignored (seed).
// Reading is never awaited, so an stdin that stays open cannot hold the line; when the line is printed,
// stdin is let go so the process can exit.
function drainStdin(stdin: StatuslineIo['stdin']): (() => void) | undefined {
  if (stdin === undefined || stdin.isTTY === true) return undefined;
  const ignore = (): void => undefined;
  stdin.on('data', ignore);
  // An EPIPE or closed stdin changes nothing for the line, which comes from the sidecar.
  stdin.on('error', ignore);
  stdin.resume();
  return () => {
    stdin.pause();
    stdin.removeListener('data', ignore);
    stdin.destroy?.();
  };
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = codeOf(err);
    return code === undefined ? err.message : `${code}: ${err.message}`;
  }
  return String(err);
}

function processIo(): StatuslineIo {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin };
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
