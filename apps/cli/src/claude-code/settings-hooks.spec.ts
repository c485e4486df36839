import { hooksSnippet, installedHooks, isOurCommand, mergeHooks, removeHooks } from './settings-hooks';

describe('settings hooks', () => {
  it('recognises our commands however they were installed, and nothing else', () => {
    expect(isOurCommand('context-guardian-claude-code capture')).toBe(true);
    expect(isOurCommand('node /opt/cg/bin/context-guardian-claude-code.js resume', 'resume')).toBe(true);
    expect(isOurCommand('"/home/me/.npm/bin/context-guardian-claude-code" capture')).toBe(true);
    expect(isOurCommand('context-guardian-claude-code capture', 'resume')).toBe(false);
    expect(isOurCommand('my-context-guardian-claude-code capture')).toBe(false);
    expect(isOurCommand('context-guardian-claude-code status')).toBe(false);
    expect(isOurCommand(42)).toBe(false);
  });

  it('merges with a custom command once, and removes only our entry from a shared group', () => {
    const shared = `${JSON.stringify(
      {
        hooks: {
          SessionEnd: [
            {
              hooks: [
                { type: 'command', command: 'backup-notes' },
                { type: 'command', command: 'node /x/context-guardian-claude-code.js capture' },
              ],
            },
          ],
        },
      },
      null,
      2,
    )}\n`;
    const { text, added } = mergeHooks(shared, 'settings.json', 'node /x/context-guardian-claude-code.js');
    expect(added).toEqual(['PreCompact', 'SessionStart']);
    expect(installedHooks(JSON.parse(text))).toEqual(['PreCompact', 'SessionEnd', 'SessionStart:compact']);
    expect(mergeHooks(text, 'settings.json').added).toEqual([]);
    expect(JSON.parse(removeHooks(text, 'settings.json').text)).toEqual({
      hooks: { SessionEnd: [{ hooks: [{ type: 'command', command: 'backup-notes' }] }] },
    });
  });

  it('recognises the forms --command can take, and still nothing of anyone else', () => {
    for (const command of [
      'npx -y context-guardian-claude-code@0.1.0 capture',
      "node '/opt/My Tools/bin/context-guardian-claude-code.js' resume",
      'env GUARDIAN_URL=http://127.0.0.1:8786 context-guardian-claude-code capture',
      'C:\\tools\\context-guardian-claude-code.cmd capture',
    ])
      expect([command, isOurCommand(command)]).toEqual([command, true]);
    for (const command of [
      'context-guardian-claude-code-fork capture',
      'echo context-guardian-claude-code-is-great capture',
      'context-guardian-statusline --format claude',
    ])
      expect([command, isOurCommand(command)]).toEqual([command, false]);
  });

  it('does not count a resume hook under another matcher as installed', () => {
    const other = {
      hooks: {
        SessionStart: [{ matcher: 'startup', hooks: [{ command: 'context-guardian-claude-code resume' }] }],
      },
    };
    expect(installedHooks(other)).toEqual([]);
    expect(hooksSnippet().hooks.SessionStart).toEqual([
      {
        matcher: 'compact',
        hooks: [{ type: 'command', command: 'context-guardian-claude-code resume', timeout: 30 }],
      },
    ]);
  });
});
