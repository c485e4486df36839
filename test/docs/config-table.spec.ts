import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * ARCHITECTURE.md#configuration: every GUARDIAN_* variable the code reads is in the README's configuration table, and
 * every row of the table is read somewhere. A variable is "read" where code indexes an env object with it or declares
 * it as a key of an env schema.
 */
const ROOT = join(__dirname, '..', '..');
/** Names that look like variables but are not configuration, with the reason. */
const NOT_CONFIGURATION: Record<string, string> = {
  GUARDIAN_TEST_CRASH_POINT: 'test-only crash hook of the archive writer (docs/ARCHIVE_FORMAT.md tests)',
};

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) sources(p, out);
    else if (name.endsWith('.ts') && !/\.(spec|int-spec|e2e-spec)\.ts$/.test(name)) out.push(p);
  }
  return out;
}

function variablesReadByCode(): Set<string> {
  const found = new Set<string>();
  const patterns = [
    /\benv\s*(?:\.|\[\s*['"])((?:GUARDIAN|CG|OTEL)_[A-Z0-9_]+)/g,
    /^\s*['"]?((?:GUARDIAN|CG)_[A-Z0-9_]+)['"]?\s*:\s*(?!readonly)/gm,
  ];
  for (const file of [...sources(join(ROOT, 'apps')), ...sources(join(ROOT, 'libs'))]) {
    const text = readFileSync(file, 'utf8');
    for (const re of patterns) for (const m of text.matchAll(re)) if (m[1]) found.add(m[1]);
  }
  for (const name of Object.keys(NOT_CONFIGURATION)) found.delete(name);
  return found;
}

function variablesInReadme(): Set<string> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(
    readme.indexOf('## Configuration'),
    readme.indexOf('\n## ', readme.indexOf('## Configuration') + 5),
  );
  return new Set([...section.matchAll(/^\| `([A-Z][A-Z0-9_]+)`/gm)].map((m) => m[1] ?? ''));
}

describe('README configuration table', () => {
  const code = variablesReadByCode();
  const readme = variablesInReadme();

  it('finds the variables the sidecar reads (the scan itself works)', () => {
    expect(code.has('GUARDIAN_UPSTREAM_URL')).toBe(true);
    expect(code.has('GUARDIAN_REDIS_URL')).toBe(true);
    expect(readme.size).toBeGreaterThan(40);
  });

  it('lists every variable the code reads', () => {
    expect([...code].filter((v) => !readme.has(v)).sort()).toEqual([]);
  });

  it('lists only variables the code reads', () => {
    expect([...readme].filter((v) => !code.has(v)).sort()).toEqual([]);
  });
});
