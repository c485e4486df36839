import { appendFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { sha256Hex } from '@guardian/archive';

import { main } from './main';
import type { SessionStartOutput } from './resume-command';
import { TranscriptFixture } from './testing/transcript-fixture';
import { testIo, type TestIo } from './testing/test-io';

const SESSION = 'a7d0c2e4-1b3f-4e5a-9c8d-0f1e2d3c4b5a';
const HASH = sha256Hex(SESSION);
const T0 = new Date('2026-10-30T15:00:00Z');

describe('context-guardian-claude-code resume', () => {
  let root: string;
  let transcript: string;
  let io: TestIo;
  let fx: TranscriptFixture;

  const hook = async (cmd: 'capture' | 'resume', fields: Record<string, string>): Promise<string> => {
    io.setStdin(JSON.stringify({ session_id: SESSION, transcript_path: transcript, cwd: root, ...fields }));
    expect(await main([cmd], io)).toBe(0);
    return io.out();
  };
  const context = (out: string): string => {
    const parsed = JSON.parse(out) as SessionStartOutput;
    expect(parsed.hookSpecificOutput.hookEventName).toBe('SessionStart');
    return parsed.hookSpecificOutput.additionalContext;
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'cc-resume-'));
    transcript = join(root, 'session.jsonl');
    io = testIo({ home: root, dataDir: join(root, 'data'), now: T0 });
    fx = new TranscriptFixture({ sessionId: SESSION, cwd: root });
    fx.user('Migrate the billing service to the new queue', { reminder: 'CLAUDE.md says: use pnpm.' })
      .tool('Edit', { file_path: 'src/billing/queue.ts', old_string: 'a', new_string: 'b' }, { text: 'ok' })
      .tool(
        'Bash',
        { command: 'pnpm test billing' },
        { text: 'FAIL queue.spec.ts\nexpected 2 got 3', isError: true },
      )
      .tool('Bash', { command: 'pnpm lint' }, { text: 'lint error', isError: true })
      .tool('Bash', { command: 'pnpm lint' }, { text: 'clean' })
      .tool('Write', { file_path: 'src/billing/retry.ts', content: 'export {}' }, { text: 'ok' })
      .assistant('Progress:\n- [x] Move producers\n- [ ] Move consumers');
    writeFileSync(transcript, fx.takeText());
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('after a compaction prints the snapshot and the archived facts as additionalContext, then deletes the snapshot', async () => {
    await hook('capture', { hook_event_name: 'PreCompact', trigger: 'auto' });
    fx.compaction('The migration is complete and all tests pass.');
    appendFileSync(transcript, fx.takeText());
    const text = context(await hook('resume', { hook_event_name: 'SessionStart', source: 'compact' }));
    expect(text).toContain(
      'if the summary claims a task is done but no matching action appears here, treat it as not done',
    );
    expect(text).toContain('## Goal');
    expect(text).toContain('Migrate the billing service to the new queue');
    expect(text).not.toContain('CLAUDE.md says');
    expect(text).toContain('- [ ] Move consumers');
    expect(text).toContain('- Bash: pnpm test billing');
    expect(text).toContain('- src/billing/queue.ts (1 edit)\n- src/billing/retry.ts (1 edit)');
    expect(text).toContain('## Errors still open');
    expect(text).toContain('- Bash: pnpm test billing: FAIL queue.spec.ts');
    expect(text).not.toContain('Bash: pnpm lint: lint error');
    expect(text).toContain(`context-guardian-recall "<term>" --session ${HASH.slice(0, 12)}`);
    expect(existsSync(join(root, 'data', 'claude-code', 'snapshots', `${HASH}.json`))).toBe(false);

    // The snapshot was used once; the archived facts are still there for the next compaction.
    const again = context(await hook('resume', { hook_event_name: 'SessionStart', source: 'compact' }));
    expect(again).not.toContain('# Snapshot');
    expect(again).toContain('## Files edited');
  });

  it('prints nothing when there is nothing: no snapshot and no spans, another source, or a bad payload', async () => {
    expect(await hook('resume', { hook_event_name: 'SessionStart', source: 'compact' })).toBe('');
    await hook('capture', { hook_event_name: 'PreCompact' });
    expect(await hook('resume', { hook_event_name: 'SessionStart', source: 'startup' })).toBe('');
    io.setStdin('{"session_id": 42}');
    expect(await main(['resume'], io)).toBe(0);
    expect(io.out()).toBe('');
  });

  it('ignores a snapshot older than 10 minutes', async () => {
    await hook('capture', { hook_event_name: 'PreCompact' });
    io.setNow(new Date(T0.getTime() + 11 * 60 * 1000));
    const text = context(await hook('resume', { source: 'compact' }));
    expect(text).not.toContain('# Snapshot');
    expect(text).toContain('## Goal');
  });

  it('stays under 8000 characters and keeps the recall line', async () => {
    for (let i = 0; i < 40; i += 1) {
      fx.user(`Instruction ${i}: ${'detail '.repeat(200)}`).tool(
        'Bash',
        { command: `./check-${i}.sh` },
        { text: `error ${i}: ${'trace '.repeat(100)}`, isError: true },
      );
      fx.tool('Edit', { file_path: `src/${'deep/'.repeat(20)}file-${i}.ts` }, { text: 'ok' });
    }
    fx.assistant('y'.repeat(5000));
    appendFileSync(transcript, fx.takeText());
    await hook('capture', { hook_event_name: 'PreCompact' });
    const text = context(await hook('resume', { source: 'compact' }));
    expect(text.length).toBeLessThanOrEqual(8000);
    expect(text).toContain('cut to stay under 8000 characters');
    expect(text).toContain('context-guardian-recall "<term>"');
  });
});
