import { factCorrections, pinsByMessage } from './pins';
import { CURRENT_MARK, factStatement, markCarried, SUPERSEDED_MARK, supersession } from './supersede';
import { rebuildInput } from './block-plan';
import type { NeutralMessage } from './types';

const user = (text: string): NeutralMessage => ({
  role: 'user',
  text,
  chars: text.length,
  callIds: [],
  resultIds: [],
  toolCalls: [],
  userTyped: true,
  spillable: true,
  digest: text,
});

describe('factStatement', () => {
  it.each([
    [
      'Remember this: the release codename for project Heron is MAPLE-123.',
      'project heron release codename',
      'MAPLE-123',
    ],
    [
      "Update: project Heron's release codename is now CEDAR-789",
      'project heron release codename',
      'CEDAR-789',
    ],
    ['The owner of the billing service is now Dana.', 'billing service owner', 'Dana'],
    ["Pin this: api's port is 8080.", 'api port', '8080'],
    // The compound form, as the state bench and most people word a correction (issue 32 audit).
    ['The auth release branch is FACT-RAVEN-0042.', 'auth release branch', 'FACT-RAVEN-0042'],
    ['Update: the auth release branch is now FACT-KOI-7781.', 'auth release branch', 'FACT-KOI-7781'],
    ['Update: the staging host is now db2.internal', 'staging host', 'db2.internal'],
    ['Remember this: the staging database host is db-7.internal.', 'staging database host', 'db-7.internal'],
    [
      'Correction: the project Heron release codename is CEDAR-789.',
      'project heron release codename',
      'CEDAR-789',
    ],
    // The state of the work: the label is the key.
    [
      'Current task: migrate the billing tables, tracked as FACT-ELM-1.',
      'current task:',
      'migrate the billing tables, tracked as FACT-ELM-1.',
    ],
    ['Next steps: run the backfill job FACT-OTTER-2.', 'next step:', 'run the backfill job FACT-OTTER-2.'],
  ])('reads %j', (line, key, value) => {
    expect(factStatement(line)).toEqual({ key, value });
  });

  it.each([
    'The codename is a secret.',
    'The host is db-7.',
    'This release branch is broken.',
    'Which port is 8080?',
    "Heron's release codename is now the one we discussed yesterday after lunch with the whole team",
    'Use pnpm.',
  ])('recognises no subject and attribute in %j', (line) => {
    expect(factStatement(line)).toBeUndefined();
  });
});

describe('supersession', () => {
  const old = 'Remember this: the release codename for project Heron is MAPLE-123.';
  const now = "project Heron's release codename is now CEDAR-789.";
  const other = 'Remember this: the staging database host is db-7.internal.';

  it('marks the older value superseded and the newer current, and leaves an unrelated line alone', () => {
    const marks = supersession([
      { text: old, at: 3 },
      { text: other, at: 4 },
      { text: now, at: 17 },
    ]);
    expect([...marks]).toEqual([
      [old, 'superseded'],
      [now, 'current'],
    ]);
  });

  it('marks nothing when a restatement keeps the value', () => {
    expect(
      supersession([
        { text: old, at: 1 },
        { text: "project Heron's release codename is MAPLE-123", at: 5 },
      ]).size,
    ).toBe(0);
  });

  it('goes by where a line was said, not by its place in the list', () => {
    const marks = supersession([
      { text: now, at: 2 },
      { text: old, at: 9 },
    ]);
    expect(marks.get(now)).toBe('superseded');
    expect(marks.get(old)).toBe('current');
  });

  it('puts superseded pins first in the shedding order, marked, and marks a ledger line too', () => {
    const out = markCarried({
      pins: [other, old],
      ledger: ['From now on, the release codename for project Heron is CEDAR-789.', 'Never touch prod.'],
      pinAt: (p) => (p === other ? 1 : 2),
      ledgerAt: () => 9,
    });
    expect(out.pins).toEqual([`${SUPERSEDED_MARK} ${old}`, other]);
    expect(out.ledger).toEqual([
      `${CURRENT_MARK} From now on, the release codename for project Heron is CEDAR-789.`,
      'Never touch prod.',
    ]);
  });
});

describe('corrections are pinned without a pin phrase', () => {
  it('pins "Update: ..." and "... is now ..." statements of a recognised attribute, and nothing else', () => {
    expect(
      factCorrections("Step 18: done.\nUpdate: project Heron's release codename is now CEDAR-789"),
    ).toEqual(["Update: project Heron's release codename is now CEDAR-789"]);
    expect(factCorrections('Update: the owner for the parser is Kim.')).toEqual([
      'Update: the owner for the parser is Kim.',
    ]);
    expect(factCorrections('The build is now green.')).toEqual([]);
    expect(factCorrections('Update: the auth release branch is now FACT-KOI-7781.')).toEqual([
      'Update: the auth release branch is now FACT-KOI-7781.',
    ]);
    // A state line is carried with the stated values, not pinned.
    expect(factCorrections('Status: the deploy is now green.')).toEqual([]);
    expect(factCorrections(`${'x'.repeat(2000)} Heron's codename is now X`)).toEqual([]);
  });

  it('renders the old pin marked and the correction current in the block', () => {
    const messages = [
      user('Remember this: the release codename for project Heron is MAPLE-123.'),
      user('Remember this: the staging database host is db-7.internal.'),
      user("Update: project Heron's release codename is now CEDAR-789"),
      user('What is the codename?'),
    ];
    const counter = { charsPerToken: 4, factor: 1 };
    const input = rebuildInput(
      {
        messages,
        fixedChars: 0,
        counter,
        budget: { budget: 10_000, window: 32_768, reserve: 1024, reserveClamped: false },
        pinMaxChars: 1600,
        pinsBy: pinsByMessage(messages),
        ledgerMaxChars: 1200,
      },
      { summary: 'Nothing.', cut: 3, spans: [], deferred: false, mustKeep: [] },
    );
    const block = input.renderBlock!(input.pins, input.ledger ?? []);
    expect(block).toContain(
      `- ${SUPERSEDED_MARK} Remember this: the release codename for project Heron is MAPLE-123.`,
    );
    expect(block).toContain(`- ${CURRENT_MARK} Update: project Heron's release codename is now CEDAR-789`);
    expect(block).toContain('- Remember this: the staging database host is db-7.internal.');
  });
});
