import { Command, CommanderError, Option } from 'commander';
import { z } from 'zod';
import { ANSWER_MODES, FLAVORS } from './stub-options';
import { startStub } from './stub-server';
import type { StubBackend } from './types';

// The stub as a program: `npm run stub -- --help`, and the vLLM / llama.cpp stand-in of the live deploy
// checks, which runs it in a container and so must bind 0.0.0.0 (issue 13 item 8). The STUB_* variables
// stay as defaults for scripts that already set them; a flag wins over its variable.

/** Streams and environment the stub program uses; tests pass their own. */
export interface StubCliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
}

/** Either a running stub, or the exit code of a run that started none (help, a usage error). */
export type StubCliResult = { stub: StubBackend } | { exitCode: 0 | 2 };

const optionsSchema = z.object({
  host: z.string().min(1),
  port: z.coerce.number().int().min(0).max(65535),
  window: z.coerce.number().int().positive(),
  flavor: z.enum(FLAVORS),
  model: z.string().min(1),
  answer: z.enum(ANSWER_MODES),
  latencyMs: z.coerce.number().int().min(0),
  streamMs: z.coerce.number().int().min(0),
});

const NAME = 'stub-backend';

/** Parses `argv` (without node and the script), starts the stub and prints where it listens. */
export async function runStubCli(argv: string[], io: StubCliIo): Promise<StubCliResult> {
  const program = new Command(NAME)
    .description('The stub upstream: vLLM-like OpenAI and Anthropic routes with a hard context window.')
    .addOption(
      new Option('--host <address>', 'address to bind (0.0.0.0 in a container)').default(
        io.env.STUB_HOST ?? '127.0.0.1',
      ),
    )
    .addOption(
      new Option('--port <port>', 'port to listen on; 0 picks a free one').default(
        io.env.STUB_PORT ?? '8000',
      ),
    )
    .addOption(
      new Option(
        '--window <tokens>',
        "context window: longer prompts get the flavor's overflow error",
      ).default(io.env.STUB_WINDOW ?? '8192'),
    )
    .addOption(
      new Option('--flavor <name>', 'which backend to imitate')
        .choices(FLAVORS)
        .default(io.env.STUB_FLAVOR ?? 'vllm'),
    )
    .addOption(
      new Option('--model <name>', 'model name it serves and reports').default(
        io.env.STUB_MODEL ?? 'stub-model',
      ),
    )
    .addOption(
      new Option(
        '--answer <mode>',
        'ok: "ok: <n> messages received"; recall: answer questions about FACT- tokens from the request',
      )
        .choices(ANSWER_MODES)
        .default(io.env.STUB_ANSWER ?? 'ok'),
    )
    .addOption(
      // A slow backend for the deploy checks: a request in flight when its sidecar is stopped (issue 30 item 1).
      new Option('--latency-ms <ms>', 'wait this long before answering each request').default(
        io.env.STUB_LATENCY_MS ?? '0',
      ),
    )
    .addOption(
      // A long streamed answer for the deploy checks: one still streaming when its sidecar is stopped (issue 30).
      new Option(
        '--stream-ms <ms>',
        'spread each streamed answer over this long (first event at once)',
      ).default(io.env.STUB_STREAM_MS ?? '0'),
    )
    .helpOption('-h, --help', 'show this help')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
  try {
    program.parse(argv, { from: 'user' });
  } catch (err: unknown) {
    // Commander has already printed the help or the usage error; only the exit code is left to decide.
    if (err instanceof CommanderError) return { exitCode: err.code === 'commander.helpDisplayed' ? 0 : 2 };
    throw err;
  }
  const parsed = optionsSchema.safeParse(program.opts());
  if (!parsed.success) {
    io.stderr.write(`${NAME}: ${z.prettifyError(parsed.error)}\n`);
    return { exitCode: 2 };
  }
  const options = parsed.data;
  const stub = await startStub(options);
  io.stdout.write(
    `stub listening on ${stub.url} (window ${stub.window}, flavor ${options.flavor}, model ${options.model})\n`,
  );
  return { stub };
}
