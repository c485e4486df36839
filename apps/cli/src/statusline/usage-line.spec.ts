import { parseUsage, StatuslineError } from './usage-client';
import { compact, usageLine } from './usage-line';

const seedReply = {
  window: 32000,
  used_after_compaction: 12900,
  pct: 40.3,
  count_source: 'estimate',
  model: 'demo',
  last_compaction_at: null,
};

describe('usageLine', () => {
  it("prints the seed's example line", () => {
    expect(usageLine(parseUsage(seedReply))).toBe('ctx 40% (12.9k/32k) est');
  });

  it('says exact only when the upstream counted the tokens', () => {
    expect(usageLine(parseUsage({ ...seedReply, count_source: 'tokenize' }))).toBe(
      'ctx 40% (12.9k/32k) exact',
    );
    expect(usageLine(parseUsage({ ...seedReply, count_source: 'calibrated' }))).toBe(
      'ctx 40% (12.9k/32k) est',
    );
  });

  it('rounds the percentage and works it out when the reply leaves it out', () => {
    const { pct: _pct, ...noPct } = seedReply;
    expect(usageLine(parseUsage({ ...noPct, window: 32768, used_after_compaction: 27853 }))).toBe(
      'ctx 85% (27.9k/32.8k) est',
    );
  });

  it.each([
    [0, '0'],
    [950, '950'],
    [1000, '1k'],
    [12900, '12.9k'],
    [131072, '131.1k'],
    [999_999, '1M'],
    [1_048_576, '1M'],
    [2_500_000, '2.5M'],
  ])('writes %d tokens as %s', (n, text) => {
    expect(compact(n)).toBe(text);
  });
});

describe('parseUsage', () => {
  it.each([
    ['null', null],
    ['a string', 'ctx'],
    ['no window', { ...seedReply, window: undefined }],
    ['a zero window', { ...seedReply, window: 0 }],
    ['a text count', { ...seedReply, used_after_compaction: '12900' }],
    ['no count_source', { ...seedReply, count_source: undefined }],
  ])('refuses %s with STATUSLINE_BAD_REPLY', (_label, body) => {
    expect(() => parseUsage(body)).toThrow(expect.objectContaining({ code: 'STATUSLINE_BAD_REPLY' }));
    expect(() => parseUsage(body)).toThrow(StatuslineError);
  });
});
