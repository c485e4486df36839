import { runStubCli } from './stub-cli';

/** `npm run stub -- --help`, or `node dist/libs/stub-backend/src/main.js --host 0.0.0.0 --port 8000`. */
async function main(): Promise<void> {
  const result = await runStubCli(process.argv.slice(2), process);
  if ('exitCode' in result) {
    process.exitCode = result.exitCode;
    return;
  }
  const { stub } = result;
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
