import { CHECKPOINT_MAX_CHARS, checkpointSummary } from './checkpoint';
import type { NeutralMessage } from './types';

const msg = (role: NeutralMessage['role'], text: string, tools: string[] = []): NeutralMessage => ({
  role,
  text,
  chars: text.length,
  callIds: tools.map((_, i) => `c${i}`),
  resultIds: [],
  toolCalls: tools.map((name) => ({ name, args: '{}' })),
  userTyped: role === 'user',
  spillable: true,
  digest: '',
});

describe('checkpointSummary', () => {
  it('lists the opening sentence of each user turn and the tools called, in order', () => {
    const s = checkpointSummary([
      msg('user', 'Fix the login bug. It fails on Safari.'),
      msg('assistant', '', ['read_file', 'read_file', 'edit_file']),
      msg('tool', 'file contents'),
      msg('user', 'Now add tests'),
    ]);
    expect(s.split('\n')).toEqual([
      "Checkpoint (no model-written summary was available): 4 earlier message(s); the user's requests in order:",
      '- user: Fix the login bug.',
      '- assistant called read_file, edit_file',
      '- user: Now add tests',
    ]);
  });

  it('stays under its cap, keeping the newest lines and saying what was left out', () => {
    const many = Array.from({ length: 200 }, (_, i) =>
      msg('user', `Request number ${i} with some words to take room.`),
    );
    const s = checkpointSummary(many);
    expect(s.length).toBeLessThanOrEqual(CHECKPOINT_MAX_CHARS + 80);
    expect(s).toContain('Request number 199');
    expect(s).not.toContain('Request number 0 ');
    expect(s).toMatch(/earlier line\(s\) left out; see the archived span/);
  });

  it('cuts a very long opening sentence', () => {
    const s = checkpointSummary([msg('user', 'x'.repeat(1000))]);
    expect(s.split('\n')[1]!.length).toBeLessThan(180);
  });
});
