import {
  Calibration,
  MESSAGE_OVERHEAD_CHARS,
  messageTokens,
  requestChars,
  tokensForChars,
  silentlyTruncated,
} from './estimate';
import type { NeutralMessage } from './types';

function msg(role: NeutralMessage['role'], chars: number): NeutralMessage {
  return {
    role,
    text: 'x'.repeat(chars),
    chars,
    callIds: [],
    resultIds: [],
    toolCalls: [],
    userTyped: role === 'user',
    spillable: true,
    digest: `${role}-${chars}`,
  };
}

describe('tokensForChars', () => {
  it.each([
    { chars: 0, cpt: 3.5, factor: 1, tokens: 0 },
    { chars: 7, cpt: 3.5, factor: 1, tokens: 2 },
    { chars: 8, cpt: 3.5, factor: 1, tokens: 3 },
    { chars: 3500, cpt: 3.5, factor: 1, tokens: 1000 },
    { chars: 3500, cpt: 3.5, factor: 1.3, tokens: 1300 },
    { chars: 3500, cpt: 3.5, factor: 0.7, tokens: 700 },
    { chars: 10, cpt: 4, factor: 1, tokens: 3 },
    { chars: 100, cpt: 1, factor: 1, tokens: 100 },
  ])(
    '$chars chars at $cpt chars/token x $factor -> $tokens (rounded up)',
    ({ chars, cpt, factor, tokens }) => {
      expect(tokensForChars(chars, { charsPerToken: cpt, factor })).toBe(tokens);
    },
  );

  it('counts a per-message overhead for role markers', () => {
    const counter = { charsPerToken: 1, factor: 1 };
    expect(messageTokens(msg('user', 88), counter)).toBe(88 + MESSAGE_OVERHEAD_CHARS);
    expect(requestChars([msg('system', 10), msg('user', 20)], 300)).toBe(330 + 2 * MESSAGE_OVERHEAD_CHARS);
  });
});

describe('Calibration', () => {
  function fed(ratios: readonly number[]): Calibration {
    const c = new Calibration();
    for (const r of ratios) c.observe(Math.round(r * 1000), 1000);
    return c;
  }

  it('before 5 samples applies only a ratio above 1, then the seed rule (the highest, clamped)', () => {
    expect(fed([]).factor).toBe(1);
    const four = fed([1.2, 1.1, 1.2, 1.0]);
    expect(four.samples).toBe(4);
    expect(four.calibrated).toBe(false);
    expect(four.factor).toBeCloseTo(1.2);
    // An estimate that runs high is not trusted lower until the window is calibrated.
    expect(fed([0.8, 0.85]).factor).toBe(1);
    expect(fed([1.6]).factor).toBeCloseTo(1.3);
    const five = fed([0.8, 0.85, 0.9, 0.82, 0.88]);
    expect(five.calibrated).toBe(true);
    expect(five.factor).toBeCloseTo(0.9);
  });

  it.each([
    { name: 'the highest ratio wins', ratios: [0.9, 1.1, 0.95, 1.05, 1.0], factor: 1.1 },
    { name: 'all low', ratios: [0.8, 0.85, 0.9, 0.82, 0.88], factor: 0.9 },
    { name: 'clamped at 1.3', ratios: [1.0, 1.0, 2.5, 1.0, 1.0], factor: 1.3 },
    { name: 'clamped at 0.7', ratios: [0.5, 0.4, 0.6, 0.3, 0.55], factor: 0.7 },
  ])('$name -> $factor', ({ ratios, factor }) => {
    expect(fed(ratios).factor).toBeCloseTo(factor);
  });

  it('keeps only the last 20 samples', () => {
    const c = fed([1.25, ...Array.from({ length: 19 }, () => 1.0)]);
    expect(c.samples).toBe(20);
    expect(c.factor).toBeCloseTo(1.25);
    c.observe(1000, 1000); // the 1.25 sample falls out of the window
    expect(c.samples).toBe(20);
    expect(c.factor).toBeCloseTo(1.0);
  });

  it.each([
    [0, 1000],
    [1000, 0],
    [-5, 1000],
    [Number.NaN, 1000],
  ])('ignores a sample of %p reported over %p estimated', (reported, estimated) => {
    const c = new Calibration();
    c.observe(reported, estimated);
    expect(c.samples).toBe(0);
  });
});

describe('silentlyTruncated', () => {
  it('flags a reported count well under what was forwarded, and nothing a tokenizer difference explains', () => {
    expect(silentlyTruncated(4096, 10_000)).toBe(true);
    // 0.7 is the lowest factor the calibration learns: a real tokenizer difference, not a truncation.
    expect(silentlyTruncated(7000, 10_000)).toBe(false);
    expect(silentlyTruncated(10_400, 10_000)).toBe(false);
  });

  it('does not read a tiny count as a window (a prompt-cache count: ollama/ollama#2068)', () => {
    expect(silentlyTruncated(12, 10_000)).toBe(false);
    expect(silentlyTruncated(0, 10_000)).toBe(false);
  });
});
