// The import graph the house rests on (issue 26, ARCHITECTURE.md#layers), read with TypeScript's own resolver:
// no file cycle in apps/ and libs/, and no arrow back up between the compaction stages (request -> decide ->
// answer, native/ on top, handoff.ts and compaction-errors.ts at the bottom). ESLint's zone refuses a back import
// by its path; this holds the graph itself, type-only imports included, as madge draws it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

import * as ts from 'typescript';

const ROOT = resolve(__dirname, '..', '..');
const COMPACTION = 'apps/guardian/src/compaction';
const STAGES = ['request', 'decide', 'answer', 'native'] as const;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...sources(full));
    else if (name.endsWith('.ts') && !/\.(int-|e2e-)?spec\.ts$/.test(name)) out.push(full);
  }
  return out;
}

/** Every production file of apps/ and libs/, with the files it imports (relative to the repository). */
function importGraph(): Map<string, string[]> {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), (f) => ts.sys.readFile(f));
  const options = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT).options;
  const host = ts.createCompilerHost(options);
  const files = [...sources(join(ROOT, 'apps')), ...sources(join(ROOT, 'libs'))];
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const deps: string[] = [];
    for (const ref of info.importedFiles) {
      const hit = ts.resolveModuleName(ref.fileName, file, options, host).resolvedModule;
      if (!hit || hit.isExternalLibraryImport || hit.resolvedFileName.endsWith('.d.ts')) continue;
      deps.push(relative(ROOT, hit.resolvedFileName));
    }
    graph.set(relative(ROOT, file), deps);
  }
  return graph;
}

/** The cycles of the graph, each as the files along it (Tarjan's strongly connected components of two or more). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** The stage a compaction file belongs to: its rank in the flow, 0 for the bottom files, undefined outside. */
function rank(file: string): number | undefined {
  if (!file.startsWith(`${COMPACTION}/`)) return undefined;
  const rest = file.slice(COMPACTION.length + 1);
  const stage = STAGES.findIndex((s) => rest.startsWith(`${s}/`));
  if (stage !== -1) return stage + 1;
  return rest === 'compaction.service.ts' ? STAGES.length + 1 : 0;
}

describe('the import graph', () => {
  const graph = importGraph();

  it('reads the whole house', () => {
    expect(graph.size).toBeGreaterThan(200);
    expect(graph.get(`${COMPACTION}/compaction.service.ts`)!.length).toBeGreaterThan(3);
  });

  it('has no file cycle in apps/ and libs/', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    expect(
      cycles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
          ['d', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
  });

  it('has no arrow back up between the compaction stages', () => {
    const back: string[] = [];
    for (const [file, deps] of graph) {
      const from = rank(file);
      if (from === undefined) continue;
      for (const dep of deps) {
        const to = rank(dep);
        if (to !== undefined && to > from) back.push(`${file} -> ${dep}`);
      }
    }
    expect(back).toEqual([]);
  });

  // The walk of a compacting request (ARCHITECTURE.md) enters each stage once: the door reads the headers before the
  // request stage runs, and the decide stage, once entered, does not call back into the request stage. Held here on
  // what the files can reach, so a helper that moves back into request/ fails the build and not only a recount.
  it('lets a compacting request enter the request stage once', () => {
    const door = graph.get('apps/guardian/src/proxy/proxy-door.ts')!;
    expect(door.filter((dep) => dep.startsWith(`${COMPACTION}/request/`))).toEqual([]);
    const engine = reachable(graph, `${COMPACTION}/decide/compaction-engine.ts`);
    expect(engine.size).toBeGreaterThan(10);
    expect([...engine].filter((f) => f.startsWith(`${COMPACTION}/request/`))).toEqual([]);
  });
});

/** The files `from` imports, directly or through others, inside apps/ (libs are the libraries' own). */
function reachable(graph: Map<string, string[]>, from: string): Set<string> {
  const seen = new Set<string>();
  const next = [from];
  for (let f = next.pop(); f !== undefined; f = next.pop())
    for (const dep of graph.get(f) ?? [])
      if (dep.startsWith('apps/') && !seen.has(dep)) {
        seen.add(dep);
        next.push(dep);
      }
  return seen;
}
