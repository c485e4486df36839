import { isoTimestamp } from './iso-time';

describe('isoTimestamp', () => {
  it('is toISOString, whether the second was seen before or not', () => {
    const base = Date.UTC(2026, 11, 7, 21, 56, 0);
    const times = [
      0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1500, 59_999, 60_000, 86_399_999, 86_400_000, 5, 1005,
    ];
    for (const offset of times) {
      const at = new Date(base + offset);
      expect(isoTimestamp(at)).toBe(at.toISOString());
      expect(isoTimestamp(at)).toBe(at.toISOString());
    }
  });

  it('agrees with toISOString before 1970 and past year 9999', () => {
    for (const ms of [
      -1, -999, -1000, -1001, -62_198_755_200_001, 253_402_300_799_999, 253_402_300_800_001,
    ]) {
      const at = new Date(ms);
      expect(isoTimestamp(at)).toBe(at.toISOString());
      expect(isoTimestamp(new Date(ms))).toBe(at.toISOString());
    }
  });

  it('throws for an invalid date, as toISOString does', () => {
    expect(() => isoTimestamp(new Date(Number.NaN))).toThrow(RangeError);
  });
});
