import { MAIN_QUIET_MS, chooseUsage, usageCandidate } from './usage-selection';

const AT = '2026-12-01T10:00:00.000Z';
const T = Date.parse(AT);
/** What Claude Code's main request leaves on the line: 25 tools, answered at AT. */
const main = { tools: 25, at: AT };

describe('chooseUsage: which request a session usage follows (ADR 0010)', () => {
  it('follows the first request of a session, whatever it is', () => {
    expect(chooseUsage(undefined, { tools: 0, maxOutputTokens: 1 }, T)).toEqual({ follow: true });
  });

  it.each([1, 16])('keeps the line on a probe for max %i output tokens, with or without tools', (max) => {
    expect(chooseUsage(main, { tools: 0, maxOutputTokens: max }, T + 1000)).toEqual({
      follow: false,
      kind: 'probe',
    });
    expect(chooseUsage(main, { tools: 25, maxOutputTokens: max }, T + MAIN_QUIET_MS * 10)).toEqual({
      follow: false,
      kind: 'probe',
    });
  });

  it('follows a request for 17 output tokens or more, or with no limit, that offers as many tools', () => {
    expect(chooseUsage(main, { tools: 25, maxOutputTokens: 17 }, T)).toEqual({ follow: true });
    expect(chooseUsage(main, { tools: 25 }, T)).toEqual({ follow: true });
    expect(chooseUsage(main, { tools: 30, maxOutputTokens: 32000 }, T)).toEqual({ follow: true });
  });

  it('keeps the line on a helper (fewer tools) while the main request is recent', () => {
    // OpenCode's and Claude Code's title requests (no tools), Qwen Code's follow-up (4 beside 11).
    expect(chooseUsage(main, { tools: 0, maxOutputTokens: 32000 }, T + 1000)).toEqual({
      follow: false,
      kind: 'helper',
    });
    expect(chooseUsage({ tools: 11, at: AT }, { tools: 4 }, T + MAIN_QUIET_MS - 1)).toEqual({
      follow: false,
      kind: 'helper',
    });
  });

  it('follows a helper once the main request has been quiet for ten minutes (that client was left)', () => {
    expect(chooseUsage(main, { tools: 0 }, T + MAIN_QUIET_MS)).toEqual({ follow: true });
  });

  it('follows any request after a record without a tool count or with an unreadable time', () => {
    expect(chooseUsage({ at: AT }, { tools: 0 }, T)).toEqual({ follow: true });
    expect(chooseUsage({ tools: 25, at: 'yesterday' }, { tools: 0 }, T)).toEqual({ follow: true });
  });
});

describe('usageCandidate', () => {
  it('reads tools and the output limit of each route', () => {
    expect(usageCandidate({ tools: [{}, {}], max_tokens: 1 })).toEqual({ tools: 2, maxOutputTokens: 1 });
    expect(usageCandidate({ max_completion_tokens: 64 })).toEqual({ tools: 0, maxOutputTokens: 64 });
    expect(usageCandidate({ tools: [{}], max_output_tokens: 500 })).toEqual({
      tools: 1,
      maxOutputTokens: 500,
    });
    expect(usageCandidate({ tools: 'none', max_tokens: '1' })).toEqual({ tools: 0 });
  });
});
