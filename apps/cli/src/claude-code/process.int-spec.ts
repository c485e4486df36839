import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { verifyArchive } from '@guardian/archive';

import { TranscriptFixture } from './testing/transcript-fixture';

// The real process over real pipes, as Claude Code runs a command hook: JSON on stdin, exit code, stdout.
const ROOT = resolve(__dirname, '..', '..', '..', '..');
/**
 * A hang guard, never a verdict (test/support/wait.ts MUST_COME_MS): spawnSync blocks the worker, so jest's own timeout
 * could not end a hung child. A child compiled on the fly takes seconds on a busy machine; 15 s was a limit it hit.
 */
const HANG_GUARD_MS = 5 * 60_000;

describe('context-guardian-claude-code as a process', () => {
  let root: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'cc-process-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const hook = (cmd: string, payload: unknown): { status: number | null; stdout: string } => {
    const child = spawnSync(
      process.execPath,
      [
        '-r',
        join(ROOT, 'test', 'support', 'swc-register.js'),
        join(ROOT, 'apps', 'cli', 'src', 'claude-code', 'main.ts'),
        cmd,
      ],
      {
        input: typeof payload === 'string' ? payload : JSON.stringify(payload),
        env: {
          PATH: process.env.PATH ?? '',
          HOME: root,
          XDG_DATA_HOME: join(root, 'xdg'),
          CLAUDE_CONFIG_DIR: join(root, '.claude'),
        },
        encoding: 'utf8',
        timeout: HANG_GUARD_MS,
      },
    );
    if (child.error) throw new Error(`the ${cmd} hook did not finish: a hang (${child.error.message})`);
    return { status: child.status, stdout: child.stdout };
  };

  it('PreCompact capture, then SessionStart resume: exit 0, archive in the default data dir, context JSON on stdout', async () => {
    const transcript = join(root, 'session.jsonl');
    const fx = new TranscriptFixture({ sessionId: 'proc-1', cwd: root });
    fx.user('Rename the config loader').tool('Edit', { file_path: 'src/config.ts' }, { text: 'ok' });
    writeFileSync(transcript, fx.takeText());
    const payload = { session_id: 'proc-1', transcript_path: transcript, cwd: root };
    expect(hook('capture', { ...payload, hook_event_name: 'PreCompact', trigger: 'auto' })).toEqual({
      status: 0,
      stdout: '',
    });
    const resumed = hook('resume', { ...payload, hook_event_name: 'SessionStart', source: 'compact' });
    expect(resumed.status).toBe(0);
    const out = JSON.parse(resumed.stdout) as { hookSpecificOutput: { additionalContext: string } };
    expect(out.hookSpecificOutput.additionalContext).toContain('Rename the config loader');
    expect(hook('capture', 'garbage')).toEqual({ status: 0, stdout: '' });
    expect(readFileSync(join(root, 'xdg', 'context-guardian', 'claude-code', 'hooks.log'), 'utf8')).toContain(
      'CC_BAD_HOOK_INPUT',
    );
    const verdict = await verifyArchive({ spanDir: join(root, 'xdg', 'context-guardian', 'spans') });
    expect(verdict).toMatchObject({ ok: true, runs: [expect.objectContaining({ status: 'ok' })] });
  });
});
