import { LruMap } from './lru-map';

const filled = (max: number, keys: string[]): LruMap<string, number> => {
  const map = new LruMap<string, number>(max);
  keys.forEach((k, i) => map.set(k, i));
  return map;
};

describe('LruMap', () => {
  it('drops the oldest key once past max, one key per set', () => {
    const map = filled(3, ['a', 'b', 'c', 'd']);
    expect(map.size).toBe(3);
    expect(map.peek('a')).toBeUndefined();
    map.set('e', 4);
    expect(map.peek('b')).toBeUndefined();
    expect(map.newestFirst()).toEqual([4, 3, 2]);
  });

  it('keeps a key that get has just used, and drops the next oldest instead', () => {
    const map = filled(3, ['a', 'b', 'c']);
    expect(map.get('a')).toBe(0);
    map.set('d', 3);
    expect(map.peek('a')).toBe(0);
    expect(map.peek('b')).toBeUndefined();
  });

  it('leaves the order alone on peek: the peeked key is still the first out', () => {
    const map = filled(3, ['a', 'b', 'c']);
    expect(map.peek('a')).toBe(0);
    map.set('d', 3);
    expect(map.peek('a')).toBeUndefined();
    expect(map.peek('b')).toBe(1);
  });

  it('counts a missing key as no use: get and peek answer undefined and add nothing', () => {
    const map = filled(2, ['a', 'b']);
    expect(map.get('x')).toBeUndefined();
    expect(map.peek('y')).toBeUndefined();
    expect(map.size).toBe(2);
    map.set('c', 2);
    expect(map.newestFirst()).toEqual([2, 1]);
  });

  it('replaces the value of a key set again, makes it the newest, and does not grow', () => {
    const map = filled(3, ['a', 'b', 'c']);
    map.set('a', 10);
    expect(map.size).toBe(3);
    map.set('d', 3);
    expect(map.peek('a')).toBe(10);
    expect(map.peek('b')).toBeUndefined();
    expect(map.newestFirst()).toEqual([3, 10, 2]);
  });

  it('refuses a bound that could hold nothing or is not a count', () => {
    for (const max of [0, -1, 1.5, Number.NaN]) expect(() => new LruMap(max)).toThrow(RangeError);
    expect(() => new LruMap(Number.MAX_SAFE_INTEGER)).not.toThrow();
  });

  it('holds one key at max 1: each new key replaces the last', () => {
    const map = new LruMap<string, number>(1);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.size).toBe(1);
    expect(map.peek('a')).toBeUndefined();
    expect(map.get('b')).toBe(2);
    map.set('b', 3);
    expect(map.newestFirst()).toEqual([3]);
  });

  it('forgets a deleted key, says whether it was there, and forgets everything on clear', () => {
    const map = filled(3, ['a', 'b', 'c']);
    expect(map.delete('b')).toBe(true);
    expect(map.delete('b')).toBe(false);
    expect(map.peek('b')).toBeUndefined();
    map.set('d', 3);
    map.set('e', 4);
    expect(map.newestFirst()).toEqual([4, 3, 2]);
    map.clear();
    expect(map.size).toBe(0);
    expect(map.newestFirst()).toEqual([]);
  });

  it('lists entries least recently used first, and listing them uses none', () => {
    const map = filled(3, ['a', 'b', 'c']);
    map.get('a');
    expect([...map.entries()]).toEqual([
      ['b', 1],
      ['c', 2],
      ['a', 0],
    ]);
    map.set('d', 3);
    expect([...map.entries()].map(([k]) => k)).toEqual(['c', 'a', 'd']);
  });
});
