// Two replicas starting at once on a fresh volume both make the keys they share there: the log signing key
// (`.tlog/log.key`) and the compaction handle key (`native-compaction.key`). Seen in CI: one replica read the log
// key while the other was still writing it, its log never opened, and the volume held one log for two writers.
// Two real processes race on the same fresh files, many times over; both must end with the one key that won.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROUNDS = 150;
const LOG_KEY = resolve('dist/libs/archive/src/log-key.js');
const HANDLE_KEY = resolve('dist/apps/guardian/src/compaction/native/handle-key.js');

/** One racer: makes or reads the key in each folder, in order, and prints each key it ended with. */
const RACER = `
const { loadLogKey } = require(${JSON.stringify(LOG_KEY)});
const { loadHandleKey } = require(${JSON.stringify(HANDLE_KEY)});
const [root, rounds] = [process.argv[1], Number(process.argv[2])];
(async () => {
  const out = [];
  for (let i = 0; i < rounds; i++) {
    const dir = root + '/' + i;
    let log, handle;
    try { log = (await loadLogKey({ file: dir + '/spans/.tlog/log.key', create: true, name: 'w' })).toString('hex'); }
    catch (err) { log = 'ERR ' + err.message; }
    try { handle = loadHandleKey(dir + '/native-compaction.key', { mustExist: false }).toString('hex'); }
    catch (err) { handle = 'ERR ' + err.message; }
    out.push(log + ' ' + handle);
  }
  process.stdout.write(out.join('\\n'));
})();
`;

function race(root: string): Promise<string[]> {
  return new Promise((done, fail) =>
    execFile(process.execPath, ['-e', RACER, root, String(ROUNDS)], (err: Error | null, stdout) =>
      err !== null ? fail(err) : done(stdout.split('\n')),
    ),
  );
}

describe('keys two replicas make at once on one volume', () => {
  let root: string;

  beforeAll(async () => {
    for (const built of [LOG_KEY, HANDLE_KEY]) {
      if (!existsSync(built))
        throw new Error(`${built} is missing: run \`npm run build\` first (npm test does)`);
    }
    root = await mkdtemp(join(tmpdir(), 'cg-key-race-'));
  });
  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('end as one key each, read whole by both, 0600, no temp file left', async () => {
    const [a, b] = await Promise.all([race(root), race(root)]);
    expect(a).toHaveLength(ROUNDS);
    const differing = a
      .map((line, i) => [i, line, b[i]] as const)
      .filter(([, x, y]) => x !== y || x.includes('ERR'));
    expect(differing).toEqual([]);
    for (let i = 0; i < ROUNDS; i++) {
      const dir = join(root, String(i));
      expect(statSync(join(dir, 'spans', '.tlog', 'log.key')).mode & 0o777).toBe(0o600);
      expect(statSync(join(dir, 'native-compaction.key')).mode & 0o777).toBe(0o600);
      expect(readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
      expect(readdirSync(join(dir, 'spans', '.tlog')).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    }
  });
});
