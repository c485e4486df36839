import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';

import { MUST_COME_MS } from '../support/wait';

const MAIN = join(__dirname, '..', '..', 'dist', 'apps', 'guardian', 'src', 'main.js');

describe('booting the built sidecar', () => {
  it('stops at once with a message naming the bad variable (exit 1, nothing listening)', () => {
    if (!existsSync(MAIN))
      throw new Error('dist is missing: run `npm run build` first (`npm test` builds before jest)');
    const r = spawnSync(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH, GUARDIAN_COMPACT_THRESHOLD: 'lots', GUARDIAN_PORT: '0' },
      encoding: 'utf8',
      timeout: MUST_COME_MS, // a hang guard: a busy machine may take long to load the sidecar
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('context-guardian: invalid configuration: GUARDIAN_COMPACT_THRESHOLD="lots"');
  });

  it('says in one line that the port is taken, without a stack (exit 1)', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    const dataDir = mkdtempSync(join(tmpdir(), 'cg-boot-'));
    try {
      const child = spawn(process.execPath, [MAIN], {
        env: {
          PATH: process.env.PATH,
          GUARDIAN_PORT: String(port),
          GUARDIAN_DATA_DIR: dataDir,
        },
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(1);
      expect(stderr).toBe(
        `context-guardian: cannot listen on 127.0.0.1:${port}: the address is in use; set GUARDIAN_PORT to a free port or stop what holds it\n`,
      );
    } finally {
      blocker.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
