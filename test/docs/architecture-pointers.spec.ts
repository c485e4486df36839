import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * The design the code cites lives in the repository (issue 18 item 1): every comment that points at a rule names a
 * section of docs/ARCHITECTURE.md that exists, and none points at a document outside the repository.
 */
const ROOT = join(__dirname, '..', '..');
const FOLDERS = ['apps', 'libs', 'test', 'bench'];
const EXTENSIONS = /\.(ts|html|sh|mjs|js)$/;
/** The outside document's name, spelled in two pieces so this file does not cite it. */
const OUTSIDE = 'CONTR' + 'ACTS';

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) files(p, out);
    else if (EXTENSIONS.test(name)) out.push(p);
  }
  return out;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = (m[1] ?? '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    anchors.add(slug);
  }
  return anchors;
}

describe('comments point at docs/ARCHITECTURE.md', () => {
  const sources = FOLDERS.flatMap((f) => files(join(ROOT, f)));
  const anchors = anchorsOf(readFileSync(join(ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8'));

  it('no comment cites the design document that lives outside the repository', () => {
    const outside = sources
      .filter((file) => readFileSync(file, 'utf8').includes(`${OUTSIDE} §`))
      .map((file) => relative(ROOT, file));
    expect(outside).toEqual([]);
  });

  it('every ARCHITECTURE.md#<section> cited in the tree is a section of the document', () => {
    const cited = new Map<string, string>();
    for (const file of sources) {
      for (const m of readFileSync(file, 'utf8').matchAll(/ARCHITECTURE\.md#([a-z0-9-]+)/g)) {
        cited.set(m[1] ?? '', relative(ROOT, file));
      }
    }
    const missing = [...cited].filter(([anchor]) => !anchors.has(anchor)).map(([a, f]) => `${a} (${f})`);
    expect(missing).toEqual([]);
    // The pointers are there to be followed: a tree that cites none has lost them.
    expect(cited.size).toBeGreaterThanOrEqual(8);
  });
});
