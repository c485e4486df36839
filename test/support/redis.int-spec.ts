import { spawnSync } from 'node:child_process';
import Redis from 'ioredis';
import { REDIS_IMAGE, startRedis, type TestRedis } from './redis';
import { MUST_COME_MS } from './wait';

// Where the Redis tests get their real Redis (issue 13, deliverable 3): in a container from the locally
// built image whenever an engine answers and has it, else a spawned redis-server. The expected kind is
// worked out here with the docker CLI, independently of the helper's own probe.

function docker(args: string[]): { ok: boolean; out: string } {
  const r = spawnSync('docker', args, { encoding: 'utf8', timeout: MUST_COME_MS }); // a hang guard: a slow answer must not change the kind expected
  return { ok: r.status === 0, out: (r.stdout ?? '').trim() };
}

describe('startRedis', () => {
  let redis: TestRedis | undefined;
  afterEach(async () => {
    await redis?.stop();
    redis = undefined;
  });

  it('runs the locally built image under testcontainers when the engine has it, else redis-server', async () => {
    const engineHasImage = docker(['image', 'inspect', REDIS_IMAGE]).ok;
    redis = await startRedis({ owned: true });
    process.stderr.write(`test redis: ${redis.kind} at ${redis.url}\n`);
    expect(redis.kind).toBe(engineHasImage ? 'container' : 'process');
    if (redis.kind === 'container') {
      const port = new URL(redis.url).port;
      expect(docker(['ps', '--filter', `publish=${port}`, '--format', '{{.Image}}']).out).toBe(REDIS_IMAGE);
    }
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    try {
      await client.set('cg:probe', 'kept');
      expect(await client.get('cg:probe')).toBe('kept');
    } finally {
      client.disconnect();
    }
  });

  it('kills and restarts it on the same port, empty, whichever kind it is', async () => {
    redis = await startRedis({ owned: true });
    const first = new Redis(redis.url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    first.on('error', () => undefined); // the outage below is the point of this test
    await first.connect();
    await first.set('cg:probe', 'gone after restart');
    await redis.kill();
    await expect(first.ping()).rejects.toThrow();
    first.disconnect();
    await redis.restart();
    const second = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    try {
      expect(await second.get('cg:probe')).toBeNull();
    } finally {
      second.disconnect();
    }
  });
});
