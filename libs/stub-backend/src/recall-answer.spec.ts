import { promptText } from './prompt-text';
import { recallAnswer, recallReply } from './recall-answer';

const chat = (system: string, ...users: string[]) =>
  promptText(
    {
      messages: [{ role: 'system', content: system }, ...users.map((content) => ({ role: 'user', content }))],
    },
    'chat',
  );

describe('the recall answer mode', () => {
  it('answers with the token of the sentence that shares the most words with the question', () => {
    const prompt = chat(
      'You help. Remember this: the staging database host is FACT-HERON-4821.',
      'From now on, tag every release with FACT-ORCA-2210. The nightly export writes to the bucket FACT-ELM-0042.',
      'Quick check, answer with the exact value only: which bucket does the nightly export write to?',
    );
    expect(recallAnswer(prompt)).toBe('FACT-ELM-0042');
    expect(recallReply(prompt)).toBe('The answer is FACT-ELM-0042.');
  });

  it('matches words by their start, so a question about releases finds "tag every release"', () => {
    const prompt = chat(
      'x',
      'From now on, tag every release with FACT-ORCA-2210.',
      'What do releases get tagged with?',
    );
    expect(recallAnswer(prompt)).toBe('FACT-ORCA-2210');
  });

  it('passes over a line marked superseded, as the block tells a model to, wherever it stands', () => {
    const prompt = chat(
      [
        '- [current] Update: the auth release branch is now FACT-KOI-7781.',
        '- [superseded by a later value] The auth release branch is FACT-RAVEN-0042.',
      ].join('\n'),
      'What is the auth release branch?',
    );
    expect(recallAnswer(prompt)).toBe('FACT-KOI-7781');
  });

  it('cannot answer from a bare Must Keep bullet: the value is there, what it is is not', () => {
    const prompt = chat(
      'Summary of the earlier conversation.\n## Must Keep\n- FACT-ELM-0042',
      'Which bucket does the nightly export write to?',
    );
    expect(recallAnswer(prompt)).toBeUndefined();
    expect(recallReply(prompt)).toBe('I do not know.');
  });

  it('takes the newest statement when two match alike, and never reads the question itself', () => {
    const prompt = chat(
      'The release branch is FACT-OLD-1.',
      'Correction: the release branch is FACT-NEW-2.',
      'What is the release branch? Not FACT-QUESTION-3.',
    );
    expect(recallAnswer(prompt)).toBe('FACT-NEW-2');
  });
});
