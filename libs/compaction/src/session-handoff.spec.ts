import { handoffMarkdown, sessionHandoff } from './session-handoff';
import type { NeutralMessage } from './types';

const msg = (
  role: NeutralMessage['role'],
  text: string,
  toolCalls: NeutralMessage['toolCalls'] = [],
): NeutralMessage => ({
  role,
  text,
  chars: text.length,
  callIds: [],
  resultIds: [],
  toolCalls,
  userTyped: role === 'user',
  spillable: true,
  digest: text,
});

describe('sessionHandoff', () => {
  const messages = [
    msg('system', 'You are a coding assistant.'),
    msg('user', 'Migrate the billing export to Parquet. Remember this: the owner of the export job is Dana.'),
    msg(
      'assistant',
      'We decided to keep the CSV writer until the switch. I will edit src/export/writer.ts.',
      [{ name: 'edit_file', args: '{"path":"src/export/writer.ts"}' }],
    ),
    msg('user', 'Never touch the prod bucket. Update: the owner of the export job is now Kim.'),
    msg('tool', 'wrote 3 files: src/ignored/by-role.ts'),
    msg('user', 'Can you run the tests? And which bucket holds the nightly files?'),
  ];
  const h = sessionHandoff(messages);

  it('reads the goal, the pins as they stand, decisions, files touched and the last open question', () => {
    expect(h).toEqual({
      goal: 'Migrate the billing export to Parquet. Remember this: the owner of the export job is Dana.',
      pins: [
        { text: 'Remember this: the owner of the export job is Dana.', status: 'superseded' },
        { text: 'Update: the owner of the export job is now Kim.', status: 'current' },
      ],
      decisions: ['We decided to keep the CSV writer until the switch.', 'Never touch the prod bucket.'],
      files: ['src/export/writer.ts'],
      open_question: 'And which bucket holds the nightly files?',
      messages: 6,
    });
  });

  it('renders Markdown with the superseded pin struck through', () => {
    const md = handoffMarkdown(h);
    expect(md).toContain('- ~~Remember this: the owner of the export job is Dana.~~ (superseded)');
    expect(md).toContain('- Update: the owner of the export job is now Kim.');
    expect(md).toContain('## Files touched\n- `src/export/writer.ts`');
  });
});
