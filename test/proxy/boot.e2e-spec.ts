import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const MAIN = join(__dirname, '..', '..', 'dist', 'apps', 'guardian', 'src', 'main.js');

describe('booting the built sidecar', () => {
  it('stops at once with a message naming the bad variable (exit 1, nothing listening)', () => {
    if (!existsSync(MAIN))
      throw new Error('dist is missing: run `npm run build` first (`npm test` builds before jest)');
    const r = spawnSync(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH, GUARDIAN_COMPACT_THRESHOLD: 'lots', GUARDIAN_PORT: '0' },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('context-guardian: invalid configuration: GUARDIAN_COMPACT_THRESHOLD="lots"');
  });
});
