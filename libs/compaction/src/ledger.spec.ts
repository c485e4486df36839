import {
  carriedLedger,
  extractInstructions,
  instructionsOf,
  isStandingInstruction,
  LEDGER_MESSAGE_MAX_CHARS,
  LEDGER_SENTENCE_MAX_CHARS,
  typedWords,
} from './ledger';
import type { NeutralMessage } from './types';

function msg(
  role: NeutralMessage['role'],
  text: string,
  extra: Partial<NeutralMessage> = {},
): NeutralMessage {
  return {
    role,
    text,
    chars: text.length,
    callIds: [],
    resultIds: [],
    toolCalls: [],
    userTyped: role === 'user',
    spillable: role !== 'system',
    digest: '',
    ...extra,
  };
}

describe('isStandingInstruction: the rule of ADR 0012', () => {
  it.each([
    ['a prohibition', 'Never touch prod.'],
    ['a lasting imperative', 'Always run the linter before you commit.'],
    ["don't", "Don't push to main directly."],
    ['do not', 'Do not edit the generated files under src/gen.'],
    ['make sure', 'Make sure every migration has a down step.'],
    ['avoid', 'Avoid new dependencies.'],
    ['prefer', 'Prefer small commits with a why in the message.'],
    ['stick to', 'Stick to the existing error codes.'],
    ['remember to', 'Remember to update the changelog.'],
    ['lead words first', 'Also, please never force-push.'],
    ['an "important:" lead', 'Important: always answer in English.'],
    ['from now on, anywhere', 'Tests go in __tests__ from now on.'],
    ['going forward', 'Going forward we deploy from the release branch.'],
    ['for the rest of the session', 'Answer tersely for the rest of the session.'],
    ['until I say otherwise', 'Keep the feature flag off until I say otherwise.'],
    ['every time you', 'Run the formatter every time you touch a file.'],
    ['by default', 'Target Node 20 by default.'],
    ['you must', 'You must keep the public API stable.'],
    ['you should always', 'You should always add a test with a fix.'],
    ['I want you to never', 'I want you to never commit secrets.'],
    ['a short "use X"', 'Use pnpm.'],
    ['a short "use X, not Y"', 'Use tabs, not spaces.'],
  ])('%s: "%s"', (_name, sentence) => {
    expect(isStandingInstruction(sentence)).toBe(true);
  });

  it.each([
    ['a plain statement', 'The build failed on CI.'],
    ['a one-off request', 'Fix the failing test in billing.ts.'],
    ['a question', 'Should we always retry on 503?'],
    ['"never mind"', 'Never mind, it works now.'],
    [
      'a long "use" sentence',
      'Use the second approach from the list above because it keeps the parser simple.',
    ],
    ['"always" inside a statement', 'The job fails always on Mondays but that is fine.'],
    ['too short to say anything', 'Never.'],
    ['longer than a rule', `Never ${'do this and that '.repeat(20)}.`],
  ])('not %s: "%s"', (_name, sentence) => {
    expect(isStandingInstruction(sentence)).toBe(false);
  });

  it('keeps a sentence at most LEDGER_SENTENCE_MAX_CHARS long', () => {
    const at = `Never ${'x'.repeat(LEDGER_SENTENCE_MAX_CHARS - 7)}.`;
    expect(at).toHaveLength(LEDGER_SENTENCE_MAX_CHARS);
    expect(isStandingInstruction(at)).toBe(true);
    expect(isStandingInstruction(`${at}x`)).toBe(false);
  });
});

describe('extractInstructions: the user typed words only', () => {
  it('takes the instruction sentences of a message, verbatim and in order', () => {
    const text = 'Let us start on the billing service. Use pnpm. The tests live in test/. Never touch prod!';
    expect(extractInstructions(text)).toEqual(['Use pnpm.', 'Never touch prod!']);
  });

  it('joins a sentence that ends in a colon with the one after it', () => {
    expect(extractInstructions('From now on:\nrun the e2e tests before you push.')).toEqual([
      'From now on: run the e2e tests before you push.',
    ]);
  });

  it("leaves out what a client wraps around the user's words (Claude Code's reminders, Codex's context)", () => {
    const reminder =
      '<system-reminder>\nAs you answer, never mention this reminder. Always use the TodoWrite tool.\n</system-reminder>';
    const context = '<environment_context>\n  <cwd>/repo</cwd>\n  Never run rm.\n</environment_context>';
    expect(extractInstructions(`${reminder}\n${context}\nNever deploy on Fridays.`)).toEqual([
      'Never deploy on Fridays.',
    ]);
    // The reminder's own length does not make the user's few words a paste.
    const long = `<system-reminder>\n${'Always read CLAUDE.md first. '.repeat(300)}\n</system-reminder>\nUse pnpm.`;
    expect(extractInstructions(long)).toEqual(['Use pnpm.']);
  });

  it('leaves out fenced code and quoted lines', () => {
    const text = [
      'Here is the script:',
      '```sh',
      '# never run this twice',
      'always_retry=1',
      '```',
      '> Never trust the cache, said the old README.',
      'Always pin versions in package.json.',
    ].join('\n');
    expect(extractInstructions(text)).toEqual(['Always pin versions in package.json.']);
  });

  it('reads nothing in a paste: a message longer than LEDGER_MESSAGE_MAX_CHARS without its tagged blocks', () => {
    const log = Array.from({ length: 60 }, (_, i) => `line ${i}: retry scheduled, never gave up`).join('\n');
    expect(log.length).toBeGreaterThan(LEDGER_MESSAGE_MAX_CHARS);
    expect(extractInstructions(`Never deploy on Fridays.\n${log}`)).toEqual([]);
  });

  it('an unclosed tag is text like any other, and a paste of generics is not stripped into a short message', () => {
    expect(typedWords('<T>\nNever cast to any.')).toBe('<T>\nNever cast to any.');
    const generics = `${'<Array>\nconst a: Array<string> = [];\n'.repeat(200)}Never cast to any.`;
    expect(extractInstructions(generics)).toEqual([]);
  });

  it('takes nothing from an assistant, a tool result or a system message', () => {
    const rule = 'Never touch prod.';
    expect(instructionsOf(msg('assistant', rule))).toEqual([]);
    expect(instructionsOf(msg('tool', rule, { userTyped: false }))).toEqual([]);
    expect(instructionsOf(msg('user', rule, { userTyped: false, resultIds: ['call_1'] }))).toEqual([]);
    expect(instructionsOf(msg('system', rule))).toEqual([]);
    expect(instructionsOf(msg('user', rule))).toEqual([rule]);
  });
});

describe('carriedLedger', () => {
  const history = [
    msg('system', 'You are careful. Never guess.'),
    msg('user', 'Use npm. Never touch prod.'),
    msg('assistant', 'Understood, I will always ask first.'),
    msg('user', 'Show me the failing test.'),
    msg('user', 'Actually, use pnpm, not npm. never touch prod'),
    msg('user', 'Avoid new dependencies.'),
  ];

  it('carries the instructions of the evicted messages once each, in their newest wording, oldest first', () => {
    expect(carriedLedger({ messages: history, cut: 5, maxChars: 1200, carried: [] })).toEqual([
      'Use npm.',
      'Actually, use pnpm, not npm.',
      'never touch prod',
    ]);
  });

  it('reads only before the cut: the kept tail carries its own words', () => {
    expect(carriedLedger({ messages: history, cut: 3, maxChars: 1200, carried: [] })).toEqual([
      'Use npm.',
      'Never touch prod.',
    ]);
  });

  it('drops the oldest first at the cap, counting a bullet and a line break per entry, and 0 turns it off', () => {
    const all = carriedLedger({ messages: history, cut: 6, maxChars: 1200, carried: [] });
    expect(all).toEqual([
      'Use npm.',
      'Actually, use pnpm, not npm.',
      'never touch prod',
      'Avoid new dependencies.',
    ]);
    const newestTwo = 'never touch prod'.length + 3 + 'Avoid new dependencies.'.length + 3;
    expect(carriedLedger({ messages: history, cut: 6, maxChars: newestTwo, carried: [] })).toEqual(
      all.slice(2),
    );
    expect(carriedLedger({ messages: history, cut: 6, maxChars: newestTwo - 1, carried: [] })).toEqual(
      all.slice(3),
    );
    expect(carriedLedger({ messages: history, cut: 6, maxChars: 0, carried: [] })).toEqual([]);
  });

  it('does not repeat an instruction a pin already carries verbatim', () => {
    const messages = [msg('user', "Don't forget: never touch prod."), msg('user', 'Use pnpm.')];
    expect(
      carriedLedger({ messages, cut: 2, maxChars: 1200, carried: ["Don't forget: never touch prod."] }),
    ).toEqual(['Use pnpm.']);
  });

  it('carries only the newest that fit, however long the session', () => {
    const long = Array.from({ length: 5000 }, (_, i) => msg('user', `Never skip step ${i}.`));
    const ledger = carriedLedger({ messages: long, cut: 5000, maxChars: 100, carried: [] });
    expect(ledger).toEqual([
      'Never skip step 4996.',
      'Never skip step 4997.',
      'Never skip step 4998.',
      'Never skip step 4999.',
    ]);
  });
});
