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
    const shared = {
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
    };
    const { settings, added } = mergeHooks(shared, 'node /x/context-guardian-claude-code.js');
    expect(added).toEqual(['PreCompact', 'SessionStart']);
    expect(installedHooks(settings)).toEqual(['PreCompact', 'SessionEnd', 'SessionStart:compact']);
    expect(mergeHooks(settings).added).toEqual([]);
    const removed = removeHooks(settings).settings;
    expect(removed).toEqual({
      hooks: { SessionEnd: [{ hooks: [{ type: 'command', command: 'backup-notes' }] }] },
    });
    expect(shared.hooks.SessionEnd[0]?.hooks).toHaveLength(2);
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
