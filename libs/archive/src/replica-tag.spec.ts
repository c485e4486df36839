import { createHash } from 'node:crypto';
import { hostname } from 'node:os';

import { replicaTag } from './replica-tag';

describe('replicaTag (docs/ARCHITECTURE.md#files)', () => {
  const started = new Date('2025-01-02T03:04:05.678Z');

  it('is the first 8 hex of sha256(hostname, pid, start time)', () => {
    const expected = createHash('sha256')
      .update(`${hostname()}\n${process.pid}\n${started.toISOString()}`)
      .digest('hex')
      .slice(0, 8);
    expect(replicaTag(started)).toBe(expected);
  });

  it('differs for another process or another start time on the same host', () => {
    const tag = replicaTag(started, { pid: 100 });
    expect(replicaTag(started, { pid: 101 })).not.toBe(tag);
    expect(replicaTag(new Date(started.getTime() + 1), { pid: 100 })).not.toBe(tag);
    expect(tag).toMatch(/^[0-9a-f]{8}$/);
  });
});
