// A real Redis for integration tests (HOUSE "Tests": integration tests run against real services).
// Order: REDIS_URL when set (a shared server: it cannot be killed or restarted); else testcontainers with
// `redis:7-bookworm` when a Docker engine answers and has that image (no registry is reachable
// here: `bash test/deploy/live/engine.sh up` builds it from Debian's redis-server, as CI does before the
// tests); else `redis-server` (REDIS_SERVER, PATH, or what test/support/obtain-tools.sh unpacked) on a free port.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';

import { MUST_COME_MS } from './wait';
import { findTool, howToObtain } from './tools';

export interface TestRedis {
  /** `redis://[:password@]127.0.0.1:<port>` */
  url: string;
  /** Where this Redis runs: a testcontainers container, a spawned redis-server, or REDIS_URL's server. */
  kind: 'container' | 'process' | 'shared';
  /** Stop and clean up; safe to call twice. A no-op for REDIS_URL. */
  stop(): Promise<void>;
  /** SIGKILL the server (an outage). Throws for REDIS_URL, which the test does not own. */
  kill(): Promise<void>;
  /** Start it again on the SAME port (empty: nothing is persisted). Throws for REDIS_URL. */
  restart(): Promise<void>;
  /**
   * Freeze the server: connections stay open, nothing answers (SIGSTOP for a process, `docker pause` for a
   * container, whose own pid 1 is not a pid of this machine). Throws for REDIS_URL.
   */
  pause(): Promise<void>;
  /** Undo pause(). */
  resume(): Promise<void>;
}

export interface StartRedisOptions {
  /** Start a server this test owns even when REDIS_URL is set (needed for kill/restart or a password). */
  owned?: boolean;
  /** Start the server with `requirepass`; the returned URL carries it. Implies `owned`. */
  password?: string;
}

/** The image CI builds locally (test/deploy/live/images/redis.Dockerfile); compose runs the same one. */
export const REDIS_IMAGE = 'redis:7-bookworm';
/**
 * A hang guard only: a slow engine on a busy machine must not turn a container Redis into a spawned one (which kind
 * runs is asserted in redis.int-spec.ts); an absent or dead engine fails at once.
 */
const DOCKER_PROBE_MS = MUST_COME_MS;
/** A hang guard: a server that was started must answer, however busy the machine. */
const READY_TIMEOUT_MS = MUST_COME_MS;

/** A real Redis: see the order above. Never skips: without any Redis it throws how to install one. */
export async function startRedis(options: StartRedisOptions = {}): Promise<TestRedis> {
  const shared = process.env.REDIS_URL;
  if (shared !== undefined && shared !== '' && options.owned !== true && options.password === undefined) {
    return sharedRedis(shared);
  }
  const port = await freePort();
  if ((await dockerAnswers()) && (await imageBuilt())) {
    try {
      return await containerRedis(port, options.password);
    } catch (err) {
      // An engine that answers may still fail to run the image (a broken daemon): use a local binary.
      process.stderr.write(`test redis: container failed (${String(err)}); trying redis-server\n`);
    }
  }
  return processRedis(port, options.password);
}

function sharedRedis(url: string): TestRedis {
  const refuse = async (): Promise<void> => {
    throw new Error(
      'test redis: REDIS_URL names a shared server that this test cannot kill or restart; use startRedis({ owned: true })',
    );
  };
  return {
    url,
    kind: 'shared',
    stop: async () => undefined,
    kill: refuse,
    restart: refuse,
    pause: refuse,
    resume: refuse,
  };
}

function urlFor(port: number, password: string | undefined): string {
  const auth = password === undefined ? '' : `:${encodeURIComponent(password)}@`;
  return `redis://${auth}127.0.0.1:${port}`;
}

async function processRedis(port: number, password: string | undefined): Promise<TestRedis> {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  if (password !== undefined) args.push('--requirepass', password);
  const url = urlFor(port, password);
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    const started = spawn(findTool('redis-server') ?? 'redis-server', args, { stdio: 'ignore' });
    child = started;
    const failed = new Promise<never>((_, reject) => {
      started.once('error', (err: NodeJS.ErrnoException) => {
        const hint = err.code === 'ENOENT' ? `${howToObtain('redis-server')}, or set REDIS_URL` : err.message;
        reject(new Error(`test redis: ${hint}`, { cause: err }));
      });
      started.once('exit', (code) =>
        reject(new Error(`test redis: redis-server exited with ${code} before answering`)),
      );
    });
    const abort = new AbortController();
    try {
      await Promise.race([waitForPing(url, abort.signal), failed]);
    } finally {
      abort.abort(); // stop polling when the server failed to start
    }
    failed.catch(() => undefined); // later exits are kill()/stop(), which the caller asked for
  };
  const halt = async (signal: NodeJS.Signals): Promise<void> => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill(signal);
    await exited;
  };
  const onExit = (): void => {
    child?.kill('SIGKILL');
  };
  process.once('exit', onExit);
  await launch();
  const signal = async (name: NodeJS.Signals): Promise<void> => {
    if (child?.pid === undefined) throw new Error('test redis: the server is not running');
    child.kill(name);
  };
  return {
    url,
    kind: 'process',
    stop: async () => {
      process.off('exit', onExit);
      await halt('SIGTERM');
    },
    kill: () => halt('SIGKILL'),
    restart: async () => {
      await halt('SIGKILL');
      await launch();
    },
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
  };
}

async function containerRedis(port: number, password: string | undefined): Promise<TestRedis> {
  // Ryuk, testcontainers' reaper, is an image from Docker Hub, which cannot be pulled here; this helper
  // removes its own containers instead (stop(), and the exit hook below for a test that never calls it).
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
  const { GenericContainer, getContainerRuntimeClient } = await import('testcontainers');
  const command = ['redis-server', '--save', '', '--appendonly', 'no'];
  if (password !== undefined) command.push('--requirepass', password);
  // A fixed host port, so that restart() brings Redis back where the stores under test reconnect.
  const container = await new GenericContainer(REDIS_IMAGE)
    .withCommand(command)
    .withExposedPorts({ container: 6379, host: port })
    .start();
  const url = urlFor(container.getMappedPort(6379), password);
  const client = await getContainerRuntimeClient();
  const handle = client.container.getById(container.getId());
  const onExit = (): void => {
    // Synchronous, as an 'exit' handler must be; the container may already be gone.
    spawnSync('docker', ['rm', '-f', container.getId()], { stdio: 'ignore' });
  };
  process.once('exit', onExit);
  return {
    url,
    kind: 'container',
    stop: async () => {
      process.off('exit', onExit);
      await container.stop({ timeout: 0 });
    },
    kill: () => client.container.stop(handle, { timeout: 0 }),
    restart: async () => {
      await client.container.start(handle);
      await waitForPing(url);
    },
    pause: async () => void (await handle.pause()),
    resume: async () => void (await handle.unpause()),
  };
}

/** Whether the engine has the locally built Redis image: pulling it would fail offline, slowly. */
async function imageBuilt(): Promise<boolean> {
  const { getContainerRuntimeClient, ImageName } = await import('testcontainers');
  const client = await getContainerRuntimeClient();
  if (await client.image.exists(ImageName.fromString(REDIS_IMAGE))) return true;
  process.stderr.write(
    `test redis: ${REDIS_IMAGE} is not built (bash test/deploy/live/engine.sh up builds it); using redis-server\n`,
  );
  return false;
}

/** Whether a Docker engine is likely present and answers; false on any failure. */
async function dockerAnswers(): Promise<boolean> {
  const hints = [
    process.env.DOCKER_HOST,
    existsSync('/var/run/docker.sock') ? 'socket' : undefined,
    existsSync(join(homedir(), '.docker', 'run', 'docker.sock')) ? 'desktop' : undefined,
    existsSync(join(homedir(), '.testcontainers.properties')) ? 'properties' : undefined,
  ];
  // Loading testcontainers costs time; without any sign of an engine there is nothing to probe.
  if (hints.every((hint) => hint === undefined || hint === '')) return false;
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    const probe = getContainerRuntimeClient().then(() => true);
    return await Promise.race([probe, sleep(DOCKER_PROBE_MS, false, { ref: false })]);
  } catch (err) {
    process.stderr.write(`test redis: no container runtime (${String(err)}); using redis-server\n`);
    return false;
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('test redis: no free port');
  return address.port;
}

async function waitForPing(url: string, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last: unknown;
  while (Date.now() < deadline && signal?.aborted !== true) {
    // disconnectTimeout 0: a refused probe's socket is already gone, and ioredis would otherwise keep a
    // 2 s timer for it alive after the test.
    const client = new Redis(url, {
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      disconnectTimeout: 0,
    });
    client.on('error', (err: unknown) => {
      last = err;
    });
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return;
    } catch (err) {
      last = err; // not up yet: try again until the deadline
    } finally {
      client.disconnect();
    }
    await sleep(50);
  }
  throw new Error(
    `test redis: ${url.replace(/:[^@/]*@/, ':***@')} did not answer PING within ${READY_TIMEOUT_MS} ms`,
    { cause: last },
  );
}
