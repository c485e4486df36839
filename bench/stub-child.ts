// The stub upstream in its own process for the overhead benchmark, so that the load generator, the stub and the
// proxy under test each have an event loop of their own. `node stub-child.js <window>` prints {"url": ...}.
import { startStub } from '@guardian/stub-backend';

startStub({ window: Number(process.argv[2] ?? 1_000_000), maxRecorded: 16 }).then(
  (stub) => {
    process.stdout.write(`${JSON.stringify({ url: stub.url })}\n`);
    process.once('SIGTERM', () => void stub.close().finally(() => process.exit(0)));
  },
  (err: unknown) => {
    process.stderr.write(`stub child: ${String(err)}\n`);
    process.exit(1);
  },
);
