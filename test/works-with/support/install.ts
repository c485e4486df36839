import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { ClientSpec } from '../clients';

/**
 * The clients cache: one folder per client, named after its npm package with `@` and `/` replaced by `_`
 * (`@openai/codex` -> `_openai_codex`), each an npm project holding that one package.
 */
export const clientDir = (clientsDir: string, spec: ClientSpec): string =>
  join(clientsDir, spec.pkg.replace(/[@/]/g, '_'));

const packageDir = (clientsDir: string, spec: ClientSpec): string =>
  join(clientDir(clientsDir, spec), 'node_modules', ...spec.pkg.split('/'));

/** The installed binary and its version, or undefined when the client is not installed under `clientsDir`. */
export function installedVersion(
  clientsDir: string,
  spec: ClientSpec,
): { bin: string; version: string } | undefined {
  const bin = join(clientDir(clientsDir, spec), 'node_modules', '.bin', spec.bin);
  const pkgJson = join(packageDir(clientsDir, spec), 'package.json');
  if (!existsSync(bin) || !existsSync(pkgJson)) return undefined;
  return { bin, version: (JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string }).version };
}

const runs = (bin: string): boolean =>
  spawnSync(bin, ['--version'], { stdio: 'ignore', timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } })
    .status === 0;

/**
 * Installs `spec.pkg@spec.version` from npm into its folder under `clientsDir` (docs/WORKS_WITH.md, "How to re-run").
 * npm 11 may hold back a package's install script until it is approved; Claude Code and OpenCode put their native
 * binary in place there, so when the binary does not answer `--version` afterwards the script is run by hand.
 * Returns a line for the log; throws when npm fails or the binary still does not run.
 */
export function installClient(clientsDir: string, spec: ClientSpec): string {
  const dir = clientDir(clientsDir, spec);
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, 'package.json'))) writeFileSync(join(dir, 'package.json'), '{"private":true}\n');
  const npm = spawnSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--save-exact', `${spec.pkg}@${spec.version}`],
    { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (npm.status !== 0)
    throw new Error(
      `npm install ${spec.pkg}@${spec.version} failed: ${npm.stderr.trim().split('\n').pop() ?? ''}`,
    );
  const found = installedVersion(clientsDir, spec);
  if (!found) throw new Error(`${spec.pkg} installed, but ${spec.bin} is not in ${dir}/node_modules/.bin`);
  if (!runs(found.bin)) {
    const pkg = JSON.parse(readFileSync(join(packageDir(clientsDir, spec), 'package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
    };
    const script = pkg.scripts?.postinstall;
    if (script) spawnSync('sh', ['-c', script], { cwd: packageDir(clientsDir, spec), stdio: 'ignore' });
    if (!runs(found.bin)) throw new Error(`${found.bin} --version fails after its install script`);
  }
  return `${spec.name}: ${spec.pkg}@${found.version} in ${dir}`;
}
