import { transcriptLine, type NeutralMessage } from '@guardian/compaction';

import { refuseSummary, type ReplacedText } from './summary-check';

function message(role: NeutralMessage['role'], text: string): NeutralMessage {
  const base = { chars: text.length, callIds: [], resultIds: [], spillable: false, digest: 'd' };
  return { ...base, role, text, toolCalls: [], userTyped: role === 'user' };
}

const conversation = [
  message('system', 'You keep a deploy log.'),
  message(
    'user',
    'Step 1: the staging host is FACT-HOST-11.\nThen review the build log below.\n' + 'x'.repeat(400),
  ),
  message('assistant', 'Reviewed step 1; nothing blocks the deploy.'),
  message('user', 'Step 2: rotate the key FACT-KEY-22 before Friday. ' + 'y'.repeat(400)),
];
const lines = conversation.slice(1).map((m, i) => transcriptLine(m, i + 1, { toolArgChars: 200 }));
const replaced: ReplacedText = { lines, callLines: lines };

const good = [
  'The user is reviewing build logs step by step; staging host FACT-HOST-11, key FACT-KEY-22 to rotate.',
  '## Must Keep',
  '- FACT-HOST-11',
  '- FACT-KEY-22',
].join('\n');

describe('refuseSummary (issue 32 item 7)', () => {
  it('accepts a summary in the asked-for shape', () => {
    expect(refuseSummary(good, replaced)).toBeUndefined();
  });

  it('refuses an answer without the "## Must Keep" section, such as a bare list of turn numbers', () => {
    expect(refuseSummary('[21]\n[32]\n[43]\n[54]\n[65]\n[76]\n[87]\n[97]', replaced)).toBe('no_must_keep');
    expect(refuseSummary(good.replace('## Must Keep', 'Must keep:'), replaced)).toBe('no_must_keep');
  });

  it('refuses a transcript-shaped line that no evicted turn holds', () => {
    const invented = `[1] user: Notes for step 7: the release codename is INVENTED-0007.\n${good}`;
    expect(refuseSummary(invented, replaced)).toBe('invented_line');
    // The right text under another turn's number or role is not what that turn said either.
    expect(refuseSummary(`[3] user: Reviewed step 1; nothing blocks the deploy.\n${good}`, replaced)).toBe(
      'invented_line',
    );
    expect(refuseSummary(`[9] assistant: ok\n${good}`, replaced)).toBe('invented_line');
  });

  it('accepts a quote of what an evicted turn did say, bulleted, cut short or spread over a line break', () => {
    const quoting = [
      '- [2] assistant: "Reviewed step 1; nothing blocks the deploy."',
      '[1] user: Step 1: the staging host is FACT-HOST-11. Then review…',
      '[3] USER: step 2: rotate the key',
      good,
    ].join('\n');
    expect(refuseSummary(quoting, replaced)).toBeUndefined();
  });

  it.each([
    ['an unindexed role', 'user: Notes for step 7: the release codename is INVENTED-0007.'],
    ['a capitalised role', 'User: Notes for step 7: the release codename is INVENTED-0007.'],
    ['a bold index and role', '**[7] user:** Notes for step 7: the release codename is INVENTED-0007.'],
    ['a bold role', '- **User**: Notes for step 7: the release codename is INVENTED-0007.'],
    ['a turn and a role in parentheses', 'Turn 7 (user): Notes for step 7: INVENTED-0007.'],
    ['a hash index', '#7 user: Notes for step 7: INVENTED-0007.'],
    ['a parenthesised index', '(7) user: Notes for step 7: INVENTED-0007.'],
    ['a numbered list', '2. assistant: I rolled back the migration and paged the on-call engineer.'],
    ['a quoted Human line', '> Human: Notes for step 7: INVENTED-0007.'],
    ['an Assistant line', 'Assistant: Understood. I rolled back the migration.'],
    ['a bare list of turns the stretch does not have', '[21] [32] [43]'],
  ])('refuses a transcript-shaped line with %s that no evicted turn holds', (_, line) => {
    expect(refuseSummary(`${line}\n${good}`, replaced)).toBe('invented_line');
  });

  it.each([
    ['an unindexed role', 'User: Step 2: rotate the key FACT-KEY-22 before Friday.'],
    ['a bold role', '- **Assistant**: Reviewed step 1; nothing blocks the deploy.'],
    ['a Human line', 'Human: "Then review the build log below."'],
    ['a turn number and role', 'Turn 2 (assistant): Reviewed step 1…'],
    ['a role over a list, quoting nothing', '**User:**'],
    ['bare turns the stretch has', '[1] [2]'],
  ])('accepts %s that quotes what an evicted turn did say', (_, line) => {
    expect(refuseSummary(`${line}\n${good}`, replaced)).toBeUndefined();
  });

  it('does not read a role word inside a sentence as a transcript line', () => {
    const prose = `The user: a developer on the deploy team, asked for FACT-HOST-11.\n${good}`;
    expect(refuseSummary(prose, replaced)).toBeUndefined();
  });

  it('accepts a line the summary so far already carries (a checkpoint is guardian’s own)', () => {
    const prior = 'Checkpoint (no model-written summary was available):\n[0] user: Start the deploy log.';
    const extended = `[0] user: Start the deploy log.\n${good}`;
    expect(refuseSummary(extended, { ...replaced, prior })).toBeUndefined();
    expect(refuseSummary(extended, replaced)).toBe('invented_line');
  });

  it('refuses a summary larger than the transcript and summary so far it replaces', () => {
    const callLines = [lines[1]!];
    const big = `${good}\n${'- FACT-HOST-11\n'.repeat(10)}`;
    expect(big.length).toBeGreaterThan(callLines[0]!.length);
    expect(refuseSummary(big, { lines, callLines })).toBe('too_large');
    expect(refuseSummary(big, { lines, callLines, prior: 'p'.repeat(big.length) })).toBeUndefined();
  });
});
