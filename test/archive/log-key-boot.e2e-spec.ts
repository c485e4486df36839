import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { MAIN, startSidecarProcess } from '../faults/support/sidecar-process';

// Issue 29 audit: a GUARDIAN_LOG_KEY_FILE that cannot be used (a Secret not mounted, the wrong file mounted) did not
// stop the boot; the log only warned at the first commit, and every span went unlogged. Now the built sidecar says
// so at boot, naming the file and never its content, and exits 1, as for GUARDIAN_NATIVE_KEY_FILE.
const SEED = Buffer.alloc(32, 7);
const SIGNER = `PRIVATE+KEY+deploy.example/key+00000000+${Buffer.concat([Buffer.of(1), SEED]).toString('base64')}`;

async function boot(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', GUARDIAN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
  // `close`, not `exit`: the last stderr bytes may arrive after the exit event.
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, output };
}

describe('GUARDIAN_LOG_KEY_FILE is checked at boot', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cg-logkey-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const env = (keyFile: string) => ({
    GUARDIAN_DATA_DIR: join(dir, 'data'),
    GUARDIAN_UPSTREAM_URL: 'http://127.0.0.1:9/v1',
    GUARDIAN_LOG_KEY_FILE: keyFile,
  });

  it('a file that is not there stops the built sidecar with exit 1 and its path', async () => {
    const missing = join(dir, 'not-mounted', 'log.key');
    const { code, output } = await boot(env(missing));
    expect(code).toBe(1);
    expect(output).toContain(
      `context-guardian: GUARDIAN_LOG_KEY_FILE cannot be used: log key ${missing} cannot be read (ENOENT)`,
    );
  });

  it('a file that holds no signer key stops it too, and its content is never printed', async () => {
    const wrong = join(dir, 'wrong.key');
    // The verifier key mounted in place of the signer key: a common slip, and a secret-looking line.
    const content = 'deploy.example/key+2c4f1a2b+AXWJ4xJvGVvSEWm0T9YFeqwo2Y3nqKqn4bD3Z6vG7bFQ';
    await writeFile(wrong, `${content}\n`, { mode: 0o600 });
    const { code, output } = await boot(env(wrong));
    expect(code).toBe(1);
    expect(output).toContain(
      `context-guardian: GUARDIAN_LOG_KEY_FILE cannot be used: log key ${wrong}: not an Ed25519 note signer key`,
    );
    expect(output).not.toContain(content);
  });

  it('a signer key in Go’s note format boots; nothing is logged before the first span', async () => {
    const good = join(dir, 'good.key');
    await writeFile(good, `${SIGNER}\n`, { mode: 0o600 });
    const sidecar = await startSidecarProcess(env(good));
    try {
      const vkey = await fetch(`${sidecar.url}/guardian/archive/log/vkey`);
      // Nothing is logged before the first span: the log is claimed when a run first names it.
      expect(vkey.status).toBe(404);
    } finally {
      sidecar.kill('SIGTERM');
      expect((await sidecar.exited).code).toBe(0);
    }
  });
});
