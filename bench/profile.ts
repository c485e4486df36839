// Reads a V8 .cpuprofile (node --cpu-prof) and says where the time went: self time by area (a package, our own
// apps and libs, node internals, GC, idle) and the heaviest functions, self and inclusive.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: an npm package, our own project, node itself, or a V8 pseudo-frame. */
export function areaOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg?.[1]) return pkg[1];
  const own = /dist\/((?:apps|libs)\/[^/]+)/.exec(url);
  if (own?.[1]) return own[1];
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0] ?? ''}`;
  return url;
}

function frameName(n: ProfileNode): string {
  const f = n.callFrame;
  const file = f.url ? basename(f.url) : '';
  return `${f.functionName || '(anonymous)'} ${file}:${f.lineNumber + 1} [${areaOf(f.url, f.functionName)}]`;
}

function top(map: Map<string, number>, n: number, total: number): string[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(
      ([k, v]) =>
        `  ${((v / total) * 100).toFixed(1).padStart(5)}%  ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}`,
    );
}

export function summariseProfile(path: string): string[] {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));

  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Boot (module loading, Nest's container) is not the per-request cost: count from the first proxied request on.
  const inRequest = (id: number): boolean => {
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur))
      if (byId.get(cur)?.callFrame.url.includes('proxy.service')) return true;
    return false;
  };
  const firstRequest = Math.max(0, profile.samples.findIndex(inRequest));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    if (i >= firstRequest) self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const areas = new Map<string, number>();
  const selfFn = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const n = byId.get(id);
    if (!n) continue;
    const area = areaOf(n.callFrame.url, n.callFrame.functionName);
    areas.set(area, (areas.get(area) ?? 0) + us);
    if (area === '(idle)') continue;
    busy += us;
    selfFn.set(frameName(n), (selfFn.get(frameName(n)) ?? 0) + us);
    // Inclusive time of our own frames: walk up once per sample bucket, counting each frame name once.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const node = byId.get(cur);
      if (!node || !/dist\/(apps|libs)\//.test(node.callFrame.url)) continue;
      const name = frameName(node);
      if (seen.has(name)) continue;
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + us);
    }
  }
  const total = [...areas.values()].reduce((a, b) => a + b, 0);
  return [
    `-- cpu profile of the sidecar (${basename(path)}), from its first proxied request on: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy`,
    'self time by area (% of busy time):',
    ...top(new Map([...areas].filter(([k]) => k !== '(idle)')), 14, busy),
    'heaviest functions, self time:',
    ...top(selfFn, 20, busy),
    'our own frames, inclusive time:',
    ...top(inclusive, 16, busy),
  ];
}

if (require.main === module) {
  for (const file of process.argv.slice(2)) process.stdout.write(`${summariseProfile(file).join('\n')}\n`);
}
