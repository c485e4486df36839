import { promptText } from './prompt-text';
import { splitText } from './reply-plan';
import { factTokens, isSummaryPrompt, SUMMARY_MARKER, summaryText } from './summary';

const chat = (...contents: string[]) =>
  promptText({ messages: contents.map((content) => ({ role: 'user', content })) }, 'chat');

describe('summary requests', () => {
  it('are recognised by the marker anywhere in the prompt text, on every route', () => {
    expect(isSummaryPrompt(chat('plain', `x ${SUMMARY_MARKER} y`))).toBe(true);
    expect(isSummaryPrompt(chat('plain'))).toBe(false);
    expect(isSummaryPrompt(promptText({ system: SUMMARY_MARKER, messages: [] }, 'messages'))).toBe(true);
    expect(isSummaryPrompt(promptText({ instructions: SUMMARY_MARKER, input: 'a' }, 'responses'))).toBe(true);
  });

  it('list each distinct FACT token once, in order of first appearance', () => {
    const prompt = chat('FACT-b2 then FACT-a1.', 'again FACT-b2 and FACT-c-3- end', 'FACTS-x FACT- none');
    expect(factTokens(prompt)).toEqual(['FACT-b2', 'FACT-a1', 'FACT-c-3']);
  });

  it('are answered with a deterministic summary naming the transcript size and the Must Keep bullets', () => {
    const prompt = chat(SUMMARY_MARKER, 'the port is FACT-PORT-8443 and FACT-ZONE-eu');
    const text = summaryText(prompt);
    expect(text).toBe(summaryText(prompt));
    const [prose, ...rest] = text.split('\n');
    expect(prose).toMatch(/^Summary of the earlier conversation: /);
    const chars = SUMMARY_MARKER.length + 'the port is FACT-PORT-8443 and FACT-ZONE-eu'.length;
    expect(prose).toContain(`${chars} transcript characters`);
    expect(prose!.length).toBeGreaterThanOrEqual(300);
    expect(prose!.length).toBeLessThanOrEqual(600);
    expect(rest).toEqual(['## Must Keep', '- FACT-PORT-8443', '- FACT-ZONE-eu']);
  });

  it('say (none) when there is no fact', () => {
    expect(summaryText(chat(SUMMARY_MARKER)).split('\n').slice(1)).toEqual(['## Must Keep', '- (none)']);
  });
});

describe('splitText', () => {
  it('cuts text into at least two deltas that join back to the text', () => {
    for (const text of [
      'ok: 3 messages received',
      'word',
      'a b',
      'one two three four five six seven eight nine',
    ]) {
      const parts = splitText(text);
      expect(parts.length).toBeGreaterThanOrEqual(2);
      expect(parts.length).toBeLessThanOrEqual(4);
      expect(parts.join('')).toBe(text);
    }
    expect(splitText('')).toEqual([]);
    expect(splitText('x')).toEqual(['x']);
  });
});
