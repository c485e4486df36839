import { rebuildInput } from './block-plan';
import { pinsByMessage } from './pins';
import { STATED_HEADING, statedSentences, statedValues } from './stated-values';
import { CURRENT_MARK, SUPERSEDED_MARK } from './supersede';
import type { NeutralMessage } from './types';

const base = { callIds: [], resultIds: [], toolCalls: [], spillable: true };
const user = (text: string): NeutralMessage => ({
  ...base,
  role: 'user',
  text,
  chars: text.length,
  userTyped: true,
  digest: text,
});
const assistant = (
  text: string,
  calls: { id: string; name: string; args: string }[] = [],
): NeutralMessage => ({
  ...base,
  role: 'assistant',
  text,
  chars: text.length,
  callIds: calls.map((c) => c.id),
  toolCalls: calls.map(({ name, args }) => ({ name, args })),
  userTyped: false,
  digest: text,
});
const tool = (id: string, text: string): NeutralMessage => ({
  ...base,
  role: 'tool',
  text,
  chars: text.length,
  resultIds: [id],
  userTyped: false,
  spillable: false,
  digest: text,
});
const words = (n: number): string => 'the migration plan goes on with the next table '.repeat(n).trim();

describe('statedSentences', () => {
  it('keeps the sentences that hold an exact value or state the work, and nothing else', () => {
    const text = [
      `The billing service listens on internal port label FACT-ELM-0042. ${words(2)}.`,
      'The search service depends on the message queue search-events-7.',
      'Current task: migrate the billing tables, tracked as PROJ-311. Next step: run the backfill job.',
      'Work item 3: the plan goes on.',
      'Which port does the gateway use, 8443?',
      'The staging database moved to 10.0.4.17 and the API to https://api.internal/v2.',
    ].join('\n');
    expect(statedSentences(text)).toEqual([
      'The billing service listens on internal port label FACT-ELM-0042.',
      'The search service depends on the message queue search-events-7.',
      'Current task: migrate the billing tables, tracked as PROJ-311.',
      'Next step: run the backfill job.',
      'The staging database moved to 10.0.4.17 and the API to https://api.internal/v2.',
    ]);
  });

  it('reads no paste, and no value inside fenced code', () => {
    expect(statedSentences(`Port 8443 is open. ${'x'.repeat(1600)}`)).toEqual([]);
    expect(statedSentences('Look at this:\n```\nconst PORT = 8443;\n```\nThanks.')).toEqual([]);
  });
});

describe('statedValues', () => {
  const messages = [
    user('The gateway listens on port 8443.'),
    assistant('Running the tests.', [{ id: 'c1', name: 'run_tests', args: '{"target":"gateway"}' }]),
    tool('c1', 'collected 12 items\nrun_tests for gateway finished: artifact id ART-5521.\nall green'),
    user('The auth release branch is rel-14.'),
    assistant('Noted.'),
    user('Update: the auth release branch is now rel-15.'),
    user('Thanks, go on.'),
  ];

  it('reads the evicted messages, oldest first, one line per tool result naming its call', () => {
    expect(statedValues({ messages, cut: 6, maxChars: 1200, carried: [] })).toEqual([
      { text: 'The gateway listens on port 8443.', at: 0 },
      {
        text: 'tool run_tests {"target":"gateway"} returned: run_tests for gateway finished: artifact id ART-5521.',
        at: 2,
      },
      { text: 'The auth release branch is rel-14.', at: 3 },
      { text: 'Update: the auth release branch is now rel-15.', at: 5 },
    ]);
  });

  it('keeps the newest under the cap, tool lines at most half of it, and nothing a pin already says', () => {
    expect(statedValues({ messages, cut: 6, maxChars: 90, carried: [] }).map((l) => l.at)).toEqual([3, 5]);
    expect(
      statedValues({
        messages,
        cut: 6,
        maxChars: 1200,
        carried: ['Update: the auth release branch is now rel-15.'],
      }).map((l) => l.at),
    ).toEqual([0, 2, 3]);
    expect(statedValues({ messages, cut: 6, maxChars: 0, carried: [] })).toEqual([]);
  });

  it('renders them in the block under their heading, the replaced value marked superseded', () => {
    const input = rebuildInput(
      {
        messages,
        fixedChars: 0,
        counter: { charsPerToken: 4, factor: 1 },
        budget: { budget: 10_000, window: 32_768, reserve: 1024, reserveClamped: false },
        pinMaxChars: 1600,
        pinsBy: pinsByMessage(messages),
        ledgerMaxChars: 1200,
        statedMaxChars: 1200,
      },
      { summary: 'Nothing.', cut: 6, spans: [], deferred: false, mustKeep: [] },
    );
    // The correction is pinned (ADR 0020); the value it replaced is a stated value, marked.
    expect(input.pins).toEqual([`${CURRENT_MARK} Update: the auth release branch is now rel-15.`]);
    expect(input.stated).toEqual([
      `${SUPERSEDED_MARK} The auth release branch is rel-14.`,
      'The gateway listens on port 8443.',
      'tool run_tests {"target":"gateway"} returned: run_tests for gateway finished: artifact id ART-5521.',
    ]);
    const block = input.renderBlock!(input.pins, input.ledger ?? [], input.stated);
    expect(block).toContain(`${STATED_HEADING}\n- ${SUPERSEDED_MARK} The auth release branch is rel-14.`);
    expect(input.renderBlock!(input.pins, input.ledger ?? [])).not.toContain(STATED_HEADING);
  });
});
