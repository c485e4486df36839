import {
  capPins,
  carriedPins,
  extractPins,
  mergePins,
  mustKeepBullets,
  pinsByMessage,
  sentences,
} from './pins';
import type { NeutralMessage } from './types';

describe('extractPins', () => {
  // The seed's full phrase list (ARCHITECTURE.md#compaction): every phrase pins the sentence that holds it.
  it.each([
    ['remember this', 'Please remember this value: 42 is the answer.'],
    ['remember this (whole sentence)', 'Remember this port number 8443 for the proxy.'],
    ['remember that', 'Remember that the staging bucket is called blue-heron.'],
    ['remember these', 'Remember these two names, Ada and Grace.'],
    ['keep this ... for later', 'Keep this build id for later, it is 7781.'],
    ['keep that ... for later', 'Keep that snippet around for later.'],
    ['keep these ... for later', 'Keep these three ports for later use in the config.'],
    ['keep it ... for later', 'Keep it for later, the token prefix is cg_live.'],
    ['for later use', 'The region is eu-west-3, for later use.'],
    ['for later reference', 'For later reference the owner is team Falcon.'],
    ["don't forget", "Don't forget the retry limit is 5."],
    ['dont forget', 'dont forget the cache lives in /var/cache/cg.'],
    ['do not forget', 'Do not forget the release is on the 14th.'],
    ['make a note', 'Make a note that the API version is v2.'],
    ['note this for later', 'Note this for later, the admin user is root.'],
    ['note that for later', 'Note that for later, we skip Windows builds.'],
    ['pin this', 'Pin this, the customer id is C-1002.'],
    ['pin that', 'Pin that so we keep the branch name feature/zeta.'],
  ])('%s', (_phrase, sentence) => {
    expect(extractPins(`Some context first. ${sentence} Then more talk.`)).toEqual([sentence]);
  });

  it('matches the phrases whatever their case', () => {
    expect(extractPins('REMEMBER THIS: the port is 8443.')).toEqual(['REMEMBER THIS: the port is 8443.']);
  });

  // A request that stands alone ("Remember this:") takes the sentence after it.
  it.each([
    [
      'Remember this:',
      'Remember this: the deploy key is named cg-prod.',
      'Remember this: the deploy key is named cg-prod.',
    ],
    [
      'Remember this.',
      'Remember this. The queue is called jobs-v2.',
      'Remember this. The queue is called jobs-v2.',
    ],
    ['Pin this:', 'Pin this: the tenant is acme-eu.', 'Pin this: the tenant is acme-eu.'],
    ["Don't forget:", "Don't forget: backups run at midnight.", "Don't forget: backups run at midnight."],
    ['Make a note:', 'Make a note: the owner is Priya.', 'Make a note: the owner is Priya.'],
    [
      'Note this for later:',
      'Note this for later: the quota is 500.',
      'Note this for later: the quota is 500.',
    ],
    [
      'on its own line',
      'Remember this:\nthe bucket is cg-archive.',
      'Remember this: the bucket is cg-archive.',
    ],
  ])('bare %s takes the next sentence', (_name, text, pin) => {
    expect(extractPins(`Hello. ${text} Thanks.`)).toEqual([pin]);
  });

  // The fact after a bare request must survive whole, whichever phrase asked for it.
  it.each([
    ['Keep this for later:', 'Keep this for later: the port is 8443.'],
    ['For later reference:', 'For later reference: the admin email is ops@example.com.'],
    ['Do not forget:', 'Do not forget: the freeze starts Monday.'],
  ])('bare %s keeps the fact that follows', (_name, text) => {
    expect(extractPins(text)).toEqual([text]);
  });

  // Pins exist to carry exact values; a sentence must not end inside one.
  it.each([
    ['a version', 'Remember that the version is 1.2.3 in production.'],
    ['a time', 'Remember this: the meeting is at 10:30 on Friday.'],
    ['a URL', 'Remember that the API lives at http://localhost:8080/v1 for now.'],
    ['a file name', "Don't forget config.yaml sits next to main.ts in the repo."],
    ['an IP address', 'Make a note that the gateway is 10.0.0.1 on the lab network.'],
  ])('keeps %s inside the pinned sentence', (_name, sentence) => {
    expect(extractPins(sentence)).toEqual([sentence]);
  });

  it('returns several pins in order', () => {
    const text = 'Remember this: the port is 8443. Unrelated line. Pin this, the user is ada. Bye.';
    expect(extractPins(text)).toEqual(['Remember this: the port is 8443.', 'Pin this, the user is ada.']);
  });

  it.each([
    'I remember the old days.',
    'Remember to water the plants.',
    'Keep this short.',
    'Keep going, we can look later.',
    'I will note it down later.',
    'Forget about it.',
    'The pinned version is fine.',
    'Spin that wheel.',
    'Make notes as you go.',
    'Later, for use in tests, add a flag.',
    '',
  ])('never pins a sentence without a phrase: %p', (text) => {
    expect(extractPins(text)).toEqual([]);
  });
});

describe('sentences', () => {
  it('splits at sentence ends and line breaks, keeping punctuation', () => {
    expect(sentences('One. Two!  Three?\n- four\n\nfive')).toEqual([
      'One.',
      'Two!',
      'Three?',
      '- four',
      'five',
    ]);
  });
});

describe('mustKeepBullets', () => {
  it('takes the bullets of the Must Keep section up to the next heading', () => {
    const summary = [
      'The user is migrating the proxy.',
      '- not this bullet',
      '## Must Keep',
      '- port 8443',
      '* bucket cg-archive',
      '  - nested owner: Priya',
      'prose in between',
      '## Next',
      '- not this either',
    ].join('\n');
    expect(mustKeepBullets(summary)).toEqual(['port 8443', 'bucket cg-archive', 'nested owner: Priya']);
  });

  it.each([
    ['no section', 'Just a summary.\n- a bullet'],
    ['(none)', 'Summary.\n## Must Keep\n- (none)'],
    ['none.', 'Summary.\n### must keep\n- none.'],
    ['empty section', 'Summary.\n## Must Keep\n'],
  ])('returns nothing for %s', (_name, summary) => {
    expect(mustKeepBullets(summary)).toEqual([]);
  });

  it('accepts another heading level and case', () => {
    expect(mustKeepBullets('### MUST KEEP\n- id 7')).toEqual(['id 7']);
  });
});

describe('mergePins', () => {
  it('unites lists in first-seen order without duplicates', () => {
    expect(mergePins(['a', 'b'], ['b', 'c'], ['a', 'd'])).toEqual(['a', 'b', 'c', 'd']);
  });
});

describe('capPins', () => {
  // Each pin costs its length plus 3 ("- " and a line break) in the block.
  const pins = ['oldest pin', 'middle pin', 'newest pin']; // 10 chars each: 13 with the bullet

  it.each([
    { max: 1000, kept: pins },
    { max: 39, kept: pins },
    { max: 38, kept: ['middle pin', 'newest pin'] },
    { max: 26, kept: ['middle pin', 'newest pin'] },
    { max: 25, kept: ['newest pin'] },
    { max: 13, kept: ['newest pin'] },
    { max: 12, kept: [] },
    { max: 0, kept: [] },
    { max: -1, kept: [] },
  ])('max $max keeps $kept (oldest dropped first)', ({ max, kept }) => {
    expect(capPins(pins, max)).toEqual(kept);
  });
});

describe('carriedPins: what the block carries for a cut, in shedding order', () => {
  const msg = (role: NeutralMessage['role'], text: string, userTyped = role === 'user'): NeutralMessage => ({
    role,
    text,
    chars: text.length,
    callIds: [],
    resultIds: [],
    toolCalls: [],
    userTyped,
    spillable: true,
    digest: '',
  });
  const messages = [
    msg('system', 'Remember this: system prompts are not pins.'),
    msg('user', 'Remember this: the deploy key is ZEBRA-7431.'),
    msg('tool', 'Remember this: tool output is not typed by a person.', false),
    msg('user', "Don't forget the bucket cg-archive."),
    msg('user', 'Remember this: after the cut.'),
  ];
  const byMessage = pinsByMessage(messages);

  it('takes only what a person typed, before the cut', () => {
    expect(byMessage.map((p) => p.length)).toEqual([0, 1, 0, 1, 1]);
    expect(carriedPins({ byMessage, cut: 4, mustKeep: [], summary: '', maxChars: 1600 })).toEqual([
      'Remember this: the deploy key is ZEBRA-7431.',
      "Don't forget the bucket cg-archive.",
    ]);
  });

  it("puts a model's Must Keep bullets first (shed first), leaving out what the summary still says", () => {
    const pins = carriedPins({
      byMessage,
      cut: 2,
      mustKeep: ['port 8443', 'region eu-west-1'],
      summary: 'The service listens on port 8443.',
      maxChars: 1600,
    });
    expect(pins).toEqual(['region eu-west-1', 'Remember this: the deploy key is ZEBRA-7431.']);
  });

  it("caps at GUARDIAN_PIN_MAX_CHARS by dropping the model's bullets before the user's own pins", () => {
    const bullets = Array.from({ length: 30 }, (_, i) => `bullet number ${i} with some words in it`);
    const pins = carriedPins({ byMessage, cut: 4, mustKeep: bullets, summary: '', maxChars: 300 });
    expect(pins.slice(-2)).toEqual([
      'Remember this: the deploy key is ZEBRA-7431.',
      "Don't forget the bucket cg-archive.",
    ]);
    expect(pins.join('').length).toBeLessThanOrEqual(300);
  });

  it('carries nothing when pinning is off', () => {
    expect(carriedPins({ byMessage, cut: 4, mustKeep: ['x'], summary: '', maxChars: 0 })).toEqual([]);
  });
});
