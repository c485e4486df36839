import { z } from 'zod';
import { ANSWER_MODES, FLAVORS } from './stub-options';
import { startStub } from './stub-server';

/**
 * Manual entry: `npm run build && node dist/libs/stub-backend/src/main.js`. Port 8000 by default, the
 * address GUARDIAN_UPSTREAM_URL points at out of the box (CONTRACTS §7).
 */
const envSchema = z.object({
  STUB_PORT: z.coerce.number().int().min(0).max(65535).default(8000),
  STUB_WINDOW: z.coerce.number().int().positive().default(8192),
  STUB_FLAVOR: z.enum(FLAVORS).default('vllm'),
  // `recall` answers questions about FACT- tokens from the request (the keep-facts bench's stand-in for a model).
  STUB_ANSWER: z.enum(ANSWER_MODES).default('ok'),
});

async function main(): Promise<void> {
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) throw new Error(`invalid environment: ${z.prettifyError(parsed.error)}`);
  const env = parsed.data;
  const stub = await startStub({
    port: env.STUB_PORT,
    window: env.STUB_WINDOW,
    flavor: env.STUB_FLAVOR,
    answer: env.STUB_ANSWER,
  });
  process.stdout.write(`stub listening on ${stub.url} (window ${stub.window}, flavor ${env.STUB_FLAVOR})\n`);
  const stop = (): void => {
    stub.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`stub: close failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`stub: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
