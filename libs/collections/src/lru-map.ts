/**
 * A Map bounded by entry count that drops the least recently used key. A Map iterates in insertion order,
 * so deleting and re-inserting a key on use keeps the oldest key first.
 */
export class LruMap<K, V> {
  private readonly map = new Map<K, V>();

  /** `max`: a whole number from 1 on (a map that holds nothing is a caller's mistake, said at once). */
  constructor(private readonly max: number) {
    if (!Number.isInteger(max) || max < 1)
      throw new RangeError(`LruMap max must be a whole number from 1, got ${max}`);
  }

  get size(): number {
    return this.map.size;
  }

  /** The value, marked as just used. */
  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  /** The value, without changing its place. */
  peek(key: K): V | undefined {
    return this.map.get(key);
  }

  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.max) {
      const oldest = this.map.keys().next();
      if (oldest.done === true) break;
      this.map.delete(oldest.value);
    }
  }

  /** True when the key was there. */
  delete(key: K): boolean {
    return this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }

  /** Keys and values, least recently used first; iterating does not mark them as used. */
  entries(): IterableIterator<[K, V]> {
    return this.map.entries();
  }

  /** Values, most recently used first. */
  newestFirst(): V[] {
    return [...this.map.values()].reverse();
  }
}
