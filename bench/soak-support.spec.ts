import { memoryMap, rssBytes } from './soak-support';

// The soak says where the sidecar's memory is by reading /proc/<pid>/smaps: the parts must add up to the RSS the
// kernel reports, or the "where it goes" figures in docs/BENCHMARKS.md would be made up.
describe('memoryMap', () => {
  it('splits a live process RSS into mapped files, the malloc [heap] and anonymous memory', () => {
    const map = memoryMap(process.pid);
    const rss = rssBytes(process.pid);

    expect(map).toBeDefined();
    const { files, brk, anonymous } = map!;
    // node's own binary is a mapped file; V8's heap is anonymous memory.
    expect(files).toBeGreaterThan(1024 * 1024);
    expect(anonymous).toBeGreaterThan(1024 * 1024);
    expect(brk).toBeGreaterThanOrEqual(0);
    expect(Math.abs(files + brk + anonymous - rss)).toBeLessThan(rss * 0.1);
  });

  it('has no figures for a process that is gone', () => {
    expect(memoryMap(2 ** 22 + 1)).toBeUndefined();
  });
});
