import { spawnSync } from 'node:child_process';

const FLAG = 'CG_WORKS_WITH_NETNS';

/**
 * Re-runs this process inside a fresh network namespace (`unshare -n`) whose only interface is loopback, so no
 * client, server or sidecar it starts can reach a real network host whatever its own settings say. Returns false
 * when already inside one, or when `unshare` is not permitted here (the caller then relies on each tool's
 * telemetry/update switches alone, and says so); otherwise exits with the inner run's status.
 */
export function reexecInLoopbackNetns(): { isolated: boolean; why: string } {
  if (process.env[FLAG] === '1') return { isolated: true, why: 'network namespace with loopback only' };
  if (process.argv.includes('--no-netns')) return { isolated: false, why: '--no-netns given' };
  const probe = spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) {
    return { isolated: false, why: 'unshare -n not permitted here; telemetry/update switches only' };
  }
  const inner = spawnSync(
    'unshare',
    [
      '-n',
      'sh',
      '-c',
      'ip link set lo up && exec "$@"',
      'sh',
      process.execPath,
      ...process.execArgv,
      ...process.argv.slice(1),
    ],
    { stdio: 'inherit', env: { ...process.env, [FLAG]: '1' } },
  );
  process.exit(inner.status ?? 1);
}
