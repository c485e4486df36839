import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The package version (`guardian_build_info`, startup lines, the MCP server's identity), read from the nearest
 * package.json named context-guardian above this file: the same in the source tree and in dist/.
 */
export function packageVersion(from = __dirname): string {
  let dir = from;
  for (let i = 0; i < 8; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'context-guardian' && typeof pkg.version === 'string') return pkg.version;
    }
    dir = dirname(dir);
  }
  return '0.0.0';
}
