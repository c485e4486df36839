import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SealedArchive, sha256Hex, writerLog } from '@guardian/archive';

import { main as recall } from '../../apps/cli/src/recall/main';
import type { CliIo } from '../../apps/cli/src/common/cli-io';
import { chatAs, loggedSpans, startTeamStack, TOKENS, type TeamStack, type Who } from './support';

// Issue 29 item 5 through the recall API: `--verify --url` checks each writer's log from the files the sidecar
// serves (key against a pin kept on the caller's machine, signature, tree and tiles, consistency), as the admin
// through the entries and as a developer through the hash tiles alone, and names a rewritten or rolled-back log.

function cliIo(env: Record<string, string>): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s), isTTY: false },
    env,
    home: '/nonexistent-home',
    now: () => new Date(),
    out: () => out,
    err: () => err,
  };
}

interface Verdict {
  log: string;
  status: string;
  checked: string;
  size: number;
  since: number | null;
  break: { kind: string } | null;
}

describe('--verify through a team sidecar checks the served logs', () => {
  let stack: TeamStack;
  let laptop: string;
  let logDir: string;

  const verifiedDirs: Record<Who, string> = { alice: '', bob: '', admin: '' };
  async function verify(who: Who): Promise<{ code: number; logs: Verdict[]; err: string }> {
    const io = cliIo({
      GUARDIAN_DATA_DIR: laptop,
      GUARDIAN_VERIFIED_DIR: verifiedDirs[who],
      GUARDIAN_URL: stack.guardian.url,
      GUARDIAN_TOKEN: TOKENS[who],
    });
    const code = await recall(['--verify', '--json'], io);
    return { code, logs: (JSON.parse(io.out()) as { logs: Verdict[] }).logs, err: io.err() };
  }

  beforeAll(async () => {
    stack = await startTeamStack();
    laptop = mkdtempSync(join(tmpdir(), 'cg-laptop-'));
    for (const who of ['alice', 'bob', 'admin'] as const) verifiedDirs[who] = join(laptop, `verified-${who}`);
    expect((await chatAs(stack, 'alice', { session: 'one', tag: 'slv-a', marker: 'ZEBRA-1' })).status).toBe(
      200,
    );
    expect((await chatAs(stack, 'bob', { session: 'two', tag: 'slv-b', marker: 'OKAPI-2' })).status).toBe(
      200,
    );
    const logs = readdirSync(join(stack.dataDir, 'spans', '.tlog')).filter((n) => /^[A-Za-z0-9_-]+$/.test(n));
    expect(logs).toHaveLength(1);
    logDir = join(stack.dataDir, 'spans', '.tlog', logs[0]!);
  });
  afterAll(async () => {
    await stack?.close();
    rmSync(laptop, { recursive: true, force: true });
  });

  it('the admin checks the entries, a developer the hash tiles; both pin the key and then check consistency', async () => {
    const size = await loggedSpans(stack);
    expect(size).toBeGreaterThan(0);
    const admin = await verify('admin');
    expect(admin).toMatchObject({ code: 0, err: '' });
    expect(admin.logs).toEqual([
      expect.objectContaining({ status: 'ok', checked: 'entries', size, since: null, break: null }),
    ]);
    const alice = await verify('alice');
    expect(alice).toMatchObject({ code: 0, err: '' });
    expect(alice.logs).toEqual([
      expect.objectContaining({ status: 'ok', checked: 'hashes', size, since: null }),
    ]);
    // The second verify starts from the checkpoint kept on this machine.
    expect((await verify('alice')).logs[0]).toMatchObject({ status: 'ok', since: size });
  });

  it('a hash tile changed on the volume is a rewritten log for the admin and for a developer', async () => {
    // The level-0 tile the current tree reads: a partial at its size (a few spans here, well under 256).
    const size = await loggedSpans(stack);
    expect(size).toBeLessThan(256);
    const tile = join(logDir, 'tile', '0', '000.p', String(size));
    const good = readFileSync(tile);
    const bad = Buffer.from(good);
    bad[3] = (bad[3] ?? 0) ^ 1;
    writeFileSync(tile, bad);
    try {
      for (const who of ['admin', 'bob'] as const) {
        const v = await verify(who);
        expect(v.code).toBe(1);
        expect(v.logs[0]).toMatchObject({ status: 'break', break: { kind: 'log-rewritten' } });
      }
    } finally {
      writeFileSync(tile, good);
    }
    expect((await verify('admin')).logs[0]).toMatchObject({ status: 'ok' });
  });

  it('a checkpoint rolled back to an earlier one is named log-rolled-back', async () => {
    const earlier = readFileSync(join(logDir, 'checkpoint'));
    expect((await chatAs(stack, 'alice', { session: 'three', tag: 'slv-c', marker: 'LYNX-3' })).status).toBe(
      200,
    );
    const size = await loggedSpans(stack);
    expect((await verify('admin')).logs[0]).toMatchObject({ status: 'ok', size });
    writeFileSync(join(logDir, 'checkpoint'), earlier);
    const v = await verify('admin');
    expect(v.code).toBe(1);
    expect(v.logs[0]).toMatchObject({ status: 'break', break: { kind: 'log-rolled-back' } });
  });

  it('a pinned log the sidecar no longer lists (deleted with its runs) is log-missing', async () => {
    // Another writer of the volume (the same volume key), pinned by both, then deleted with its run.
    const spanDir = join(stack.dataDir, 'spans');
    const other = new SealedArchive({
      spanDir,
      keepSpans: 500,
      replica: 'gone0001',
      log: writerLog({ name: 'gone0001', originPrefix: 'served.test' }),
    });
    const ref = await other.write({
      kind: 'compaction',
      sessionHash: sha256Hex('gone'),
      route: 'chat',
      model: 'demo',
      messages: [{ role: 'user', content: 'a run of a writer that will vanish' }],
      firstIndex: 1,
      summary: 'Gone.',
      at: new Date(),
    });
    await other.close();
    // (The sidecar's own log is left rolled back by the test before: only this writer's verdict is looked at.)
    for (const who of ['admin', 'bob'] as const)
      expect((await verify(who)).logs.find((l) => l.log === 'gone0001')).toMatchObject({ status: 'ok' });
    rmSync(join(spanDir, '.tlog', 'gone0001'), { recursive: true });
    rmSync(join(spanDir, ref.run), { recursive: true });
    for (const who of ['admin', 'bob'] as const) {
      const v = await verify(who);
      expect(v.code).toBe(1);
      expect(v.logs.find((l) => l.log === 'gone0001')).toMatchObject({
        status: 'break',
        break: { kind: 'log-missing' },
      });
    }
  });
});
