import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { verifyArchive } from '@guardian/archive';

import { main } from './main';
import { TranscriptFixture } from './testing/transcript-fixture';
import { testIo, type TestIo } from './testing/test-io';

// Issue 30 item 10: the hooks `install` writes must run from where the tool was installed (a clone is never on PATH),
// and `uninstall` must take out every entry it added and nothing else, byte for byte. Real files in a temp HOME.

const ROOT = resolve(__dirname, '..', '..', '..', '..');
const BIN = join(ROOT, 'bin', 'context-guardian-claude-code.js');
/** What a hook written from this checkout runs when PATH does not find it (quoted only when the path needs it). */
const ABSOLUTE = /^[\w./-]+$/.test(BIN) ? `node ${BIN}` : `node '${BIN.replaceAll("'", `'\\''`)}'`;

/** Settings files as people keep them: other hooks on the same events, their own formatting, a status line. */
const REALISTIC: Record<string, string> = {
  'four spaces, other hooks on the same events': `${JSON.stringify(
    {
      $schema: 'https://json.schemastore.org/claude-code-settings.json',
      permissions: { allow: ['Bash(npm test:*)'], deny: ['Read(./.env)'] },
      statusLine: { type: 'command', command: 'context-guardian-statusline --format claude' },
      hooks: {
        PreCompact: [{ matcher: 'manual', hooks: [{ type: 'command', command: '~/bin/notify compacting' }] }],
        SessionStart: [{ matcher: 'startup', hooks: [{ type: 'command', command: 'echo hello' }] }],
        SessionEnd: [{ hooks: [{ type: 'command', command: 'backup-notes', timeout: 5 }] }],
        PostToolUse: [
          { matcher: 'Edit|Write', hooks: [{ type: 'command', command: 'prettier --write "$FILE"' }] },
        ],
      },
      model: 'opus',
    },
    null,
    4,
  )}\n`,
  'tabs, no hooks yet':
    '{\n\t"model": "sonnet",\n\t"env": {\n\t\t"GUARDIAN_URL": "http://127.0.0.1:8786"\n\t}\n}\n',
  'two spaces, compact arrays kept as the user wrote them':
    '{\n  "permissions": { "allow": ["Bash(git status)", "Bash(ls:*)"] },\n  "hooks": {\n    "SessionEnd": [{ "hooks": [{ "type": "command", "command": "say bye" }] }]\n  }\n}\n',
};

describe('the hooks install writes, and uninstall', () => {
  let root: string;
  let configDir: string;
  let settings: string;
  let io: TestIo;

  const freshIo = (env: Record<string, string> = {}): TestIo =>
    testIo({
      home: join(root, 'home'),
      dataDir: join(root, 'data'),
      cwd: join(root, 'project'),
      env: { CLAUDE_CONFIG_DIR: configDir, PATH: join(root, 'empty-path'), ...env },
    });
  const commands = (): string[] => {
    const parsed = JSON.parse(readFileSync(settings, 'utf8')) as {
      hooks: Record<string, { hooks: { command: string }[] }[]>;
    };
    return Object.values(parsed.hooks)
      .flat()
      .flatMap((g) => g.hooks.map((h) => h.command))
      .filter((c) => c.includes('context-guardian-claude-code'))
      .sort();
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'cc-hook-command-'));
    configDir = join(root, 'claude-config');
    settings = join(configDir, 'settings.json');
    mkdirSync(configDir);
    mkdirSync(join(root, 'empty-path'));
    io = freshIo();
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('from a clone not on PATH, writes hooks that call this install by its absolute path', async () => {
    expect(await main(['install', '--apply'], io)).toBe(0);
    expect(commands()).toEqual([`${ABSOLUTE} capture`, `${ABSOLUTE} capture`, `${ABSOLUTE} resume`]);
    expect(io.out()).toContain(
      `context-guardian -- node ${ABSOLUTE.slice(5).replace(
        'context-guardian-claude-code.js',
        'context-guardian-mcp.js',
      )}`,
    );
  });

  it('writes the bare name only when PATH finds this very install (npm link), not another one', async () => {
    const linked = join(root, 'linked-bin');
    mkdirSync(linked);
    symlinkSync(BIN, join(linked, 'context-guardian-claude-code'));
    io = freshIo({ PATH: `${join(root, 'empty-path')}:${linked}` });
    expect(await main(['install', '--apply'], io)).toBe(0);
    expect(commands()).toEqual([
      'context-guardian-claude-code capture',
      'context-guardian-claude-code capture',
      'context-guardian-claude-code resume',
    ]);

    rmSync(settings);
    const other = join(root, 'other-bin');
    mkdirSync(other);
    writeFileSync(join(other, 'context-guardian-claude-code'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    io = freshIo({ PATH: other });
    expect(await main(['install', '--apply'], io)).toBe(0);
    expect(commands()[0]).toBe(`${ABSOLUTE} capture`);
  });

  it.each(Object.keys(REALISTIC))(
    'install then uninstall gives back the file byte for byte (%s)',
    async (name) => {
      const original = REALISTIC[name]!;
      writeFileSync(settings, original);
      expect(await main(['install', '--apply'], io)).toBe(0);
      const installed = readFileSync(settings, 'utf8');
      // Everything before the hooks, as the user wrote it, is still there as written.
      const at = original.indexOf('"hooks"');
      const head = original.slice(
        0,
        at !== -1 ? at : original.lastIndexOf('}', original.lastIndexOf('}') - 1) + 1,
      );
      expect(installed.startsWith(head)).toBe(true);
      expect(commands()).toHaveLength(3);
      expect(await main(['uninstall', '--apply'], io)).toBe(0);
      expect(readFileSync(settings, 'utf8')).toBe(original);
    },
  );

  it.each([
    'npx -y context-guardian-claude-code@0.1.0',
    'npm exec --prefix /opt/cg -- context-guardian-claude-code',
    `node '/opt/My Tools/bin/context-guardian-claude-code.js'`,
    'env GUARDIAN_URL=http://127.0.0.1:8786 context-guardian-claude-code',
    '/opt/cg/node_modules/.bin/context-guardian-claude-code',
  ])(
    'with --command %s, install is idempotent and uninstall removes every entry it added',
    async (command) => {
      const original = REALISTIC['four spaces, other hooks on the same events']!;
      writeFileSync(settings, original);
      expect(await main(['install', '--apply', '--command', command], io)).toBe(0);
      expect(commands()).toEqual([`${command} capture`, `${command} capture`, `${command} resume`]);
      io.out();
      expect(await main(['install', '--apply', '--command', command], io)).toBe(0);
      expect(io.out()).toContain('nothing to change (hooks already installed)');
      expect(await main(['uninstall', '--apply'], io)).toBe(0);
      const after = readFileSync(settings, 'utf8');
      expect(after).toBe(original);
      expect(after).not.toContain('context-guardian-claude-code');
    },
  );

  it('the hook it wrote runs from a shell as Claude Code runs it, and archives', () => {
    if (!existsSync(join(ROOT, 'dist', 'apps', 'cli', 'src', 'claude-code', 'main.js')))
      throw new Error('dist is missing: run `npm run build` first (`npm test` builds before jest)');
    return (async () => {
      expect(await main(['install', '--apply'], io)).toBe(0);
      const transcript = join(root, 'session.jsonl');
      const fx = new TranscriptFixture({ sessionId: 's1', cwd: root });
      fx.user('Rename the config loader');
      writeFileSync(transcript, fx.takeText());
      const child = spawnSync('/bin/sh', ['-c', commands()[0]!], {
        input: JSON.stringify({
          session_id: 's1',
          transcript_path: transcript,
          cwd: root,
          hook_event_name: 'PreCompact',
          trigger: 'auto',
        }),
        // Claude Code's hook environment: the user's PATH (node on it), not this clone's bin.
        env: { PATH: process.env.PATH ?? '', HOME: root, XDG_DATA_HOME: join(root, 'xdg') },
        encoding: 'utf8',
      });
      expect([child.status, child.stderr]).toEqual([0, '']);
      io.out();
      expect(await main(['status'], io)).toBe(0);
      expect(io.out()).not.toContain('cannot run');
      const verdict = await verifyArchive({ spanDir: join(root, 'xdg', 'context-guardian', 'spans') });
      expect(verdict).toMatchObject({ ok: true, runs: [expect.objectContaining({ status: 'ok' })] });
    })();
  });

  it('a hook from an install that cannot run (never built, dist gone) says so on stderr and exits 1, not 0', () => {
    const clone = join(root, 'clone');
    cpSync(join(ROOT, 'bin'), join(clone, 'bin'), { recursive: true });
    writeFileSync(join(clone, 'package.json'), readFileSync(join(ROOT, 'package.json')));
    const child = spawnSync(
      '/bin/sh',
      ['-c', `node '${join(clone, 'bin', 'context-guardian-claude-code.js')}' capture`],
      { input: '{}', env: { PATH: process.env.PATH ?? '', HOME: root }, encoding: 'utf8' },
    );
    expect(child.status).toBe(1);
    expect(child.stderr).toContain('context-guardian-claude-code: cannot run:');
    expect(child.stderr).toContain(`cd ${clone} && npm ci && npm run build`);
  });

  it('status says when the hooks installed cannot run, and exits 1', async () => {
    const clone = join(root, 'clone');
    cpSync(join(ROOT, 'bin'), join(clone, 'bin'), { recursive: true });
    const cloneBin = join(clone, 'bin', 'context-guardian-claude-code.js');
    expect(await main(['install', '--apply', '--command', `node '${cloneBin}'`], io)).toBe(0);
    io.out();
    expect(await main(['status'], io)).toBe(1);
    expect(io.out()).toContain(`cannot run: ${clone} is not built`);

    rmSync(settings);
    expect(await main(['install', '--apply', '--command', 'context-guardian-claude-code'], io)).toBe(0);
    io.out();
    expect(await main(['status'], io)).toBe(1);
    expect(io.out()).toContain('cannot run: context-guardian-claude-code is not on PATH');

    rmSync(clone, { recursive: true });
    rmSync(settings);
    expect(await main(['install', '--apply', '--command', `node '${cloneBin}'`], io)).toBe(0);
    io.out();
    expect(await main(['status'], io)).toBe(1);
    expect(io.out()).toContain(`cannot run: ${cloneBin} is missing`);
  });
});
