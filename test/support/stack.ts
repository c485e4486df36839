import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend, type StubOptions } from '@guardian/stub-backend';
import { createLogger } from '@guardian/telemetry';
import type { Logger } from 'pino';

import { startGuardian, type RunningGuardian } from '../../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../../apps/guardian/src/config/guardian-config';

export interface Stack {
  stub: StubBackend;
  guardian: RunningGuardian;
  /** `http://127.0.0.1:PORT/v1`, what an SDK's baseURL points at. */
  baseURL: string;
  dataDir: string;
  /** Stops the sidecar only (pending archive writes are flushed); `close()` after it stops the rest. */
  stopGuardian(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real stub upstream on a loopback port and a real sidecar in front of it, with a fresh data dir.
 * `env` overrides GUARDIAN_* variables (the upstream and the data dir are filled in).
 */
export async function startStack(
  opts: { stub?: StubOptions; env?: Record<string, string>; logger?: Logger } = {},
): Promise<Stack> {
  const stub = await startStub(opts.stub);
  const dataDir = await mkdtemp(join(tmpdir(), 'cg-test-'));
  const config = GuardianConfig.fromEnv(
    {
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_LOG_LEVEL: 'silent',
      // Pre-compaction runs behind each answer and would race the next request of a test that sends turns back to
      // back, making summariser counts depend on timing; the tests of it (test/compaction/precompact*) turn it on.
      GUARDIAN_PRECOMPACT_THRESHOLD: '0',
      // Keep-alive frames would commit a streamed answer's status line whenever a busy machine makes a summary slower
      // than the period, so a test's status and headers would depend on timing; test/proxy/keep-alive* turns it on.
      GUARDIAN_KEEPALIVE_MS: '0',
      // `auto` (the default) asks the upstream once whether it serves the compaction protocols, and that probe would
      // be one more request in the stub's record of every test that speaks them; test/compaction/native-probe* and
      // the works-with runs keep `auto`.
      GUARDIAN_NATIVE_COMPACTION: 'emulate',
      ...opts.env,
    },
    { version: 'test', home: dataDir },
  );
  const logger = opts.logger ?? createLogger({ level: config.env.GUARDIAN_LOG_LEVEL });
  const guardian = await startGuardian(config, logger, { port: 0 });
  let stopped: Promise<void> | undefined;
  const stopGuardian = () => (stopped ??= guardian.close(200));
  return {
    stopGuardian,
    stub,
    guardian,
    baseURL: `${guardian.url}/v1`,
    dataDir,
    async close() {
      await stopGuardian();
      await stub.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
