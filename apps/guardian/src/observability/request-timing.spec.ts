import { setTimeout as sleep } from 'node:timers/promises';

import { recordUpstreamWait, requestTiming, withRequestTiming, type RequestTiming } from './request-timing';

describe('withRequestTiming', () => {
  it("adds each request's own upstream waits to its own timing, when requests overlap and end in any order", async () => {
    const a: RequestTiming = { upstreamWaitMs: 0 };
    const b: RequestTiming = { upstreamWaitMs: 0 };
    let releaseB!: () => void;
    const bMayGoOn = new Promise<void>((resolve) => (releaseB = resolve));
    const runB = withRequestTiming(b, async () => {
      recordUpstreamWait(5);
      await bMayGoOn;
      // A has ended by now: B's context must still be there.
      await sleep(1);
      recordUpstreamWait(7);
    });
    await withRequestTiming(a, async () => {
      await sleep(1);
      recordUpstreamWait(3);
    });
    releaseB();
    await runB;
    expect([a.upstreamWaitMs, b.upstreamWaitMs]).toEqual([3, 12]);
  });

  it('leaves no context behind once no request is inside one, and works again after', async () => {
    const first: RequestTiming = { upstreamWaitMs: 0 };
    await withRequestTiming(first, async () => recordUpstreamWait(2));
    expect(requestTiming.getStore()).toBeUndefined();
    recordUpstreamWait(100);
    const second: RequestTiming = { upstreamWaitMs: 0 };
    await withRequestTiming(second, async () => {
      await sleep(1);
      recordUpstreamWait(4);
    });
    expect([first.upstreamWaitMs, second.upstreamWaitMs]).toEqual([2, 4]);
  });

  it('ends its context when the work throws, and passes the error on', async () => {
    const t: RequestTiming = { upstreamWaitMs: 0 };
    await expect(
      withRequestTiming(t, async () => {
        recordUpstreamWait(1);
        throw new Error('prepare failed');
      }),
    ).rejects.toThrow('prepare failed');
    expect(requestTiming.getStore()).toBeUndefined();
  });
});
