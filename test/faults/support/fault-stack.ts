import { mkdtemp, rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub, type StubBackend, type StubOptions } from '@guardian/stub-backend';
import { createLogger } from '@guardian/telemetry';

import { startGuardian, type RunningGuardian } from '../../../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../../../apps/guardian/src/config/guardian-config';
import { FaultProxy } from './fault-proxy';

export interface FaultStack {
  stub: StubBackend;
  proxy: FaultProxy;
  guardian: RunningGuardian;
  dataDir: string;
  /** guardian's log lines (pino JSON), at GUARDIAN_LOG_LEVEL (default warn). */
  logs: string[];
  /** Reads one metric sample from guardian's /metrics (0 when the series does not exist yet). */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  close(): Promise<void>;
}

/**
 * stub <- fault proxy <- guardian (in-process), each on its own loopback port, with a fresh data folder unless
 * `dataDir` names one (a tmpfs mount for the volume faults). `env` overrides GUARDIAN_* variables.
 */
export async function startFaultStack(
  opts: { stub?: StubOptions; env?: Record<string, string>; dataDir?: string } = {},
): Promise<FaultStack> {
  const stub = await startStub(opts.stub);
  const proxy = await FaultProxy.start(stub.url);
  const owned = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'cg-faults-')));
  const config = GuardianConfig.fromEnv(
    {
      GUARDIAN_UPSTREAM_URL: proxy.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_LOG_LEVEL: 'warn',
      ...opts.env,
    },
    { version: 'test', home: dataDir },
  );
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ level: config.env.GUARDIAN_LOG_LEVEL, destination });
  const guardian = await startGuardian(config, logger, { port: 0 });
  return {
    stub,
    proxy,
    guardian,
    dataDir,
    logs,
    async metric(name, labels = {}) {
      const text = await (await fetch(`${guardian.url}/metrics`)).text();
      const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
      for (const line of text.split('\n')) {
        if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
        if (want.every((w) => line.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
      }
      return 0;
    },
    async close() {
      await guardian.close(200);
      await proxy.close();
      await stub.close();
      if (owned) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
