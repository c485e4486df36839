import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { main } from './main';
import { testIo, type TestIo } from './testing/test-io';

// With no PATH, the hooks call this checkout by its absolute path (hook-command.int-spec covers the other cases).
const BIN = join(resolve(__dirname, '..', '..', '..', '..'), 'bin');
const quoted = (file: string): string => (/^[\w./-]+$/.test(file) ? file : `'${file}'`);
const HOOK = `node ${quoted(join(BIN, 'context-guardian-claude-code.js'))}`;
const MCP = `node ${quoted(join(BIN, 'context-guardian-mcp.js'))}`;

/** A settings file a real user has: other hooks on the same events, a status line, permissions. */
const EXISTING = {
  permissions: { allow: ['Bash(npm test:*)'] },
  statusLine: { type: 'command', command: 'context-guardian-statusline --format claude' },
  hooks: {
    PreCompact: [{ matcher: 'manual', hooks: [{ type: 'command', command: '~/bin/notify compacting' }] }],
    SessionStart: [{ matcher: 'startup', hooks: [{ type: 'command', command: 'echo hello' }] }],
    PostToolUse: [
      { matcher: 'Edit|Write', hooks: [{ type: 'command', command: 'prettier --write "$FILE"' }] },
    ],
  },
};

describe('context-guardian-claude-code install / uninstall / status', () => {
  let root: string;
  let configDir: string;
  let settings: string;
  let io: TestIo;

  const run = async (...argv: string[]): Promise<{ code: number; out: string }> => {
    const code = await main(argv, io);
    return { code, out: io.out() };
  };
  const backups = (): string[] => readdirSync(configDir).filter((f) => f.startsWith('settings.json.bak-'));

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'cc-install-'));
    configDir = join(root, 'claude-config');
    settings = join(configDir, 'settings.json');
    mkdirSync(configDir);
    io = testIo({
      home: join(root, 'home'),
      dataDir: join(root, 'data'),
      cwd: join(root, 'project'),
      env: { CLAUDE_CONFIG_DIR: configDir },
    });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('without --apply prints the three hooks and the MCP command and changes nothing', async () => {
    const { code, out } = await run('install');
    expect(code).toBe(0);
    const json = JSON.parse(out.slice(out.indexOf('{'), out.lastIndexOf('}') + 1)) as {
      hooks: Record<string, unknown>;
    };
    expect(json.hooks).toEqual({
      PreCompact: [{ hooks: [{ type: 'command', command: `${HOOK} capture`, timeout: 30 }] }],
      SessionEnd: [{ hooks: [{ type: 'command', command: `${HOOK} capture`, timeout: 30 }] }],
      SessionStart: [
        {
          matcher: 'compact',
          hooks: [{ type: 'command', command: `${HOOK} resume`, timeout: 30 }],
        },
      ],
    });
    expect(out).toContain(`claude mcp add --scope user --transport stdio context-guardian -- ${MCP}`);
    expect(readdirSync(configDir)).toEqual([]);
  });

  it('--apply backs up, merges beside the existing hooks, prints the diff, and is idempotent; uninstall restores', async () => {
    const original = `${JSON.stringify(EXISTING, null, 4)}\n`;
    writeFileSync(settings, original);
    const first = await run('install', '--apply');
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/backup: .*settings\.json\.bak-\d{8}-\d{6}\n/);
    expect(first.out).toContain(`\n+                         "command": "${HOOK} resume",\n`);
    expect(first.out).not.toMatch(/\n[-+] +"command": "echo hello"/);
    expect(backups()).toHaveLength(1);
    expect(readFileSync(join(configDir, backups()[0] ?? ''), 'utf8')).toBe(original);

    const merged = JSON.parse(readFileSync(settings, 'utf8')) as typeof EXISTING & {
      hooks: Record<string, unknown[]>;
    };
    expect(merged.permissions).toEqual(EXISTING.permissions);
    expect(merged.statusLine).toEqual(EXISTING.statusLine);
    expect(merged.hooks.PostToolUse).toEqual(EXISTING.hooks.PostToolUse);
    expect(merged.hooks.PreCompact?.[0]).toEqual(EXISTING.hooks.PreCompact[0]);
    expect(merged.hooks.PreCompact).toHaveLength(2);
    expect(merged.hooks.SessionStart?.[0]).toEqual(EXISTING.hooks.SessionStart[0]);
    expect(merged.hooks.SessionEnd).toHaveLength(1);

    const second = await run('install', '--apply');
    expect(second.out).toContain('nothing to change (hooks already installed)');
    expect(backups()).toHaveLength(1);
    expect(JSON.parse(readFileSync(settings, 'utf8'))).toEqual(merged);

    expect((await run('status')).out).toContain(
      `hooks: installed (${settings}): PreCompact, SessionEnd, SessionStart:compact`,
    );

    io.setNow(new Date('2026-10-30T15:00:05Z'));
    const removed = await run('uninstall', '--apply');
    expect(removed.code).toBe(0);
    expect(removed.out).toContain('removed PreCompact, SessionEnd, SessionStart');
    expect(JSON.parse(readFileSync(settings, 'utf8'))).toEqual(EXISTING);
    expect(backups()).toHaveLength(2);
    expect((await run('status')).out).toContain('hooks: not installed');
  });

  it('creates a settings file that did not exist, and uninstall then leaves an empty object', async () => {
    expect((await run('install', '--apply')).code).toBe(0);
    expect(backups()).toEqual([]);
    await run('uninstall', '--apply');
    expect(JSON.parse(readFileSync(settings, 'utf8'))).toEqual({});
  });

  it('refuses a settings file that does not parse (exit 2) and leaves it alone', async () => {
    writeFileSync(settings, '{ "hooks": { ');
    for (const cmd of ['install', 'uninstall']) {
      expect(await main([cmd, '--apply'], io)).toBe(2);
      expect(io.err()).toContain('CC_SETTINGS_INVALID');
    }
    writeFileSync(settings, '{"hooks": {"PreCompact": {"not": "an array"}}}');
    expect(await main(['install', '--apply'], io)).toBe(2);
    expect(readFileSync(settings, 'utf8')).toBe('{"hooks": {"PreCompact": {"not": "an array"}}}');
    expect(backups()).toEqual([]);
  });

  it('--scope project and --settings pick the file; a bad scope is a usage error', async () => {
    await run('install', '--apply', '--scope', 'project');
    expect(readFileSync(join(root, 'project', '.claude', 'settings.json'), 'utf8')).toContain('capture');
    await run('install', '--apply', '--settings', join(root, 'custom.json'));
    expect(readFileSync(join(root, 'custom.json'), 'utf8')).toContain('resume');
    expect(await main(['install', '--scope', 'team'], io)).toBe(2);
  });
});
