import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Each archive run's session hash and span count (`<data>/spans/<run>/run.json`, ARCHITECTURE.md#files). */
export function archiveRuns(dataDir: string): { run: string; session: string; spans: number }[] {
  const spans = join(dataDir, 'spans');
  if (!existsSync(spans)) return [];
  return readdirSync(spans)
    .filter((run) => existsSync(join(spans, run, 'run.json')))
    .map((run) => ({
      run,
      session: (JSON.parse(readFileSync(join(spans, run, 'run.json'), 'utf8')) as { session_hash: string })
        .session_hash,
      spans: readdirSync(join(spans, run)).filter((f) => /^\d{4,}\.json$/.test(f)).length,
    }));
}
