import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ownerHash } from '@guardian/archive';

import { main as claudeCode } from '../../apps/cli/src/claude-code/main';
import { testIo } from '../../apps/cli/src/claude-code/testing/test-io';
import { TranscriptFixture } from '../../apps/cli/src/claude-code/testing/transcript-fixture';
import type { CliIo } from '../../apps/cli/src/common/cli-io';
import { main as doctor } from '../../apps/cli/src/doctor/main';
import { main as recall } from '../../apps/cli/src/recall/main';
import { main as statusline } from '../../apps/cli/src/statusline/main';
import { usageLine } from '../../apps/cli/src/statusline/usage-line';
import { chatAs, startTeamStack, TOKENS, type TeamStack, type Who } from './support';

// Issue 15 item 3: the tools read through the sidecar with --url / GUARDIAN_URL and GUARDIAN_TOKEN, print what they
// print locally, and show each developer only their own runs and usage; the Claude Code capture posts to it.

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

describe('the tools through a team sidecar', () => {
  let stack: TeamStack;
  let laptop: string;
  const as = (who: Who | undefined, extra: Record<string, string> = {}) =>
    cliIo({
      // A laptop's own data folder, empty: everything shown comes through the sidecar.
      GUARDIAN_DATA_DIR: laptop,
      GUARDIAN_URL: stack.guardian.url,
      ...(who === undefined ? {} : { GUARDIAN_TOKEN: TOKENS[who] }),
      ...extra,
    });
  const local = () => cliIo({ GUARDIAN_DATA_DIR: stack.dataDir });

  beforeAll(async () => {
    stack = await startTeamStack();
    laptop = mkdtempSync(join(tmpdir(), 'cg-laptop-'));
    expect(
      (await chatAs(stack, 'alice', { session: 'laptop', tag: 'tools-a', marker: 'ZEBRA-7431' })).status,
    ).toBe(200);
    expect(
      (await chatAs(stack, 'bob', { session: 'desk', tag: 'tools-b', marker: 'OKAPI-2210' })).status,
    ).toBe(200);
  });
  afterAll(async () => {
    await stack?.close();
    rmSync(laptop, { recursive: true, force: true });
  });

  it('recall: the admin through the sidecar prints what the volume’s own recall prints', async () => {
    for (const argv of [
      ['ZEBRA-7431'],
      ['OKAPI', '--json'],
      ['--verify', '--all'],
      ['--heads'],
      ['--savings'],
    ]) {
      const here = local();
      const there = as('admin');
      const [codeHere, codeThere] = [await recall(argv, here), await recall(argv, there)];
      // The recall API has no log to verify yet: through the sidecar, --verify checks the runs and prints no log lines.
      const runsOnly = (out: string): string =>
        argv[0] === '--verify'
          ? out
              .split('\n')
              .filter((l) => !l.startsWith('log ') && !/ checked: /.test(l))
              .join('\n')
          : out;
      expect([argv, codeThere, runsOnly(there.out())]).toEqual([argv, codeHere, runsOnly(here.out())]);
      expect(there.err()).toBe('');
    }
    // Nothing was read or written on the laptop.
    expect(readdirSync(laptop)).toEqual([]);
  });

  it('recall: each developer finds their own words only, and verifies their own runs only', async () => {
    const alice = as('alice');
    expect(await recall(['OKAPI-2210'], alice)).toBe(1);
    expect(alice.out()).toBe('no hits\n');
    const bob = as('bob');
    expect(await recall(['OKAPI-2210'], bob)).toBe(0);
    expect(bob.out()).toMatch(/^\S+\/0001\.json msg \d+ \[\w+\]: .*OKAPI-2210/);
    const verify = as('alice');
    expect(await recall(['--verify', '--json'], verify)).toBe(0);
    const runs = JSON.parse(verify.out()).runs as { run: string }[];
    expect(runs).toHaveLength(1);
    const owner = JSON.parse(
      readFileSync(join(stack.dataDir, 'spans', runs[0]!.run, 'run.json'), 'utf8'),
    ).owner_hash;
    expect(owner).toBe(ownerHash('alice'));
    // A guessed session value is the guesser's own session: bob's "desk" is not alice's.
    const guess = as('alice');
    expect(await recall(['OKAPI', '--session', 'desk'], guess)).toBe(1);
  });

  it('recall: refuses without a token, with a wrong one, and never runs maintenance through the sidecar', async () => {
    const none = cliIo({ GUARDIAN_DATA_DIR: laptop });
    expect(await recall(['zebra', '--url', stack.guardian.url], none)).toBe(2);
    expect(none.err()).toBe(
      'context-guardian-recall: GUARDIAN_TOKEN_REQUIRED: X-Guardian-Token required to read the archive\n',
    );
    const wrong = as(undefined, { GUARDIAN_TOKEN: 'tok-nobody-0000000000' });
    expect(await recall(['zebra'], wrong)).toBe(2);
    expect(wrong.err()).toContain('GUARDIAN_TOKEN_INVALID: X-Guardian-Token not accepted');
    const prune = as('admin');
    expect(await recall(['--prune', '--url', stack.guardian.url], prune)).toBe(2);
    expect(prune.err()).toContain(
      '--prune changes the archive: run it where the span folder is, without --url',
    );
    const missing = as('bob');
    expect(await recall(['zebra', '--run', '20990101-000000-00000000-none'], missing)).toBe(2);
    expect(missing.err()).toContain('ARCHIVE_NOT_FOUND: no run 20990101-000000-00000000-none');
  });

  it('status line: a developer’s token shows their own usage, and a guessed session shows nothing', async () => {
    const line = async (who: Who, argv: string[]) => {
      const out: string[] = [];
      const code = await statusline(argv, {
        stdout: { write: (s: string) => out.push(s) },
        stderr: { write: () => true },
        env: { GUARDIAN_URL: stack.guardian.url, GUARDIAN_TOKEN: TOKENS[who] },
      });
      return [code, out.join('')];
    };
    const aliceUsage = (await stack.get('/guardian/usage', 'alice')).body;
    expect(await line('alice', [])).toEqual([0, `${usageLine(aliceUsage as never)}\n`]);
    expect(await line('alice', ['--session', 'laptop'])).toEqual([0, `${usageLine(aliceUsage as never)}\n`]);
    expect(await line('alice', ['--session', 'desk'])).toEqual([1, 'ctx ?\n']);
    const bobUsage = (await stack.get('/guardian/usage', 'bob')).body;
    expect(await line('bob', ['--session', 'desk'])).toEqual([0, `${usageLine(bobUsage as never)}\n`]);
  });

  it('doctor: checks the sidecar with the token and verifies the developer’s own runs through it', async () => {
    const alice = as('alice');
    expect(await doctor([], alice)).toBe(0);
    expect(alice.out()).toMatch(/^ok {4}archive {4}1 run\(s\), 1 chain line\(s\) verify OK$/m);
    const none = cliIo({ GUARDIAN_DATA_DIR: laptop });
    expect(await doctor(['--url', stack.guardian.url], none)).toBe(1);
    expect(none.out()).toContain('FAIL  stats      /guardian/stats answered 401');
    expect(none.out()).toContain(
      `FAIL  archive    cannot read the archive through ${stack.guardian.url} (through the sidecar) (GUARDIAN_TOKEN_REQUIRED`,
    );
    expect(none.out()).toContain('fix: set GUARDIAN_TOKEN to your developer token (docs/team.md)');
    expect(`${alice.out()}${none.out()}`).not.toContain(TOKENS.alice);
  });

  it('Claude Code capture: posts to the sidecar into the developer’s own run, and resumes where it ends', async () => {
    const root = mkdtempSync(join(tmpdir(), 'cg-cc-team-'));
    try {
      const transcript = join(root, 'session.jsonl');
      const session = '0b7c5e2a-44d1-4f0e-9a63-d2c1e8f7a901';
      const fx = new TranscriptFixture({ sessionId: session, cwd: root });
      fx.user('Remember: the release branch is release/7.4').assistant('Noted, release/7.4.');
      writeFileSync(transcript, fx.takeText());
      const hook = (who: Who, dataDir: string) => {
        const io = testIo({
          home: root,
          dataDir,
          env: { GUARDIAN_URL: stack.guardian.url, GUARDIAN_TOKEN: TOKENS[who] },
        });
        io.setStdin(
          JSON.stringify({ session_id: session, transcript_path: transcript, hook_event_name: 'SessionEnd' }),
        );
        return claudeCode(['capture'], io);
      };
      const aliceData = join(root, 'alice');
      expect(await hook('alice', aliceData)).toBe(0);
      fx.user('Now open the changelog for 7.4').assistant('Opened CHANGELOG.md.');
      appendFileSync(transcript, fx.takeText());
      expect(await hook('alice', aliceData)).toBe(0);
      // A second laptop of alice's without the ledger: the sidecar says where its copy ends; nothing is doubled.
      expect(await hook('alice', join(root, 'alice-2'))).toBe(0);

      // Runs where the whole phrase was found (single words like "the" match anything).
      const phraseRuns = async (who: Who, phrase: string) => {
        const io = as(who);
        await recall([phrase, '--json'], io);
        const hits = JSON.parse(io.out()).hits as { run: string; phrase_match: boolean }[];
        return [...new Set(hits.filter((h) => h.phrase_match).map((h) => h.run))];
      };
      const runs = await phraseRuns('alice', 'the release branch is');
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatch(/^cc-/);
      const spans = readdirSync(join(stack.dataDir, 'spans', runs[0]!)).filter((f) => /^\d+\.json$/.test(f));
      const archived = spans
        .map(
          (f) =>
            JSON.parse(readFileSync(join(stack.dataDir, 'spans', runs[0]!, f), 'utf8')).messages as unknown[],
        )
        .flat()
        .map((m) => `${typeof m === 'string' ? m : JSON.stringify(m)}\n`)
        .join('');
      expect(archived).toBe(readFileSync(transcript, 'utf8'));
      // No span on the laptop: only the ledger and the hook's log stay local.
      expect(readdirSync(aliceData)).not.toContain('spans');
      expect(await phraseRuns('bob', 'the release branch is')).toEqual([]);
      // Bob's hook with the same session id writes a run of his own, at offset 0.
      expect(await hook('bob', join(root, 'bob'))).toBe(0);
      const bobRuns = await phraseRuns('bob', 'the release branch is');
      expect(bobRuns).toHaveLength(1);
      expect(bobRuns).not.toContain(runs[0]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
