import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import * as path from 'node:path';

import { sealAll, type ArchiveSource, type GuardianPaths, type RunVerdict } from '@guardian/archive';
import { GuardianClientError } from '@guardian/client';

import { errorCode, fail, note, ok, type CheckResult } from './doctor-check';

/** The Node versions package.json's engines field allows: >=20.18.1 <21, or >=22. */
export function checkNode(version: string): CheckResult {
  const [major = 0, minor = 0, patch = 0] = version.replace(/^v/, '').split('.').map(Number);
  const supported = major >= 22 || (major === 20 && (minor > 18 || (minor === 18 && patch >= 1)));
  const detail = `v${version.replace(/^v/, '')} (needs >=20.18.1 <21, or >=22)`;
  return supported
    ? ok('node', detail)
    : fail('node', detail, 'install Node 22 LTS (or 20.18.1 or later on the 20 line)');
}

/**
 * The data folder: it resolves, and it is (or can be made) a writable folder. Nothing is created here: the
 * doctor only looks (the sidecar makes the folders on first write).
 */
export async function checkDataDir(paths: GuardianPaths): Promise<CheckResult[]> {
  const out: CheckResult[] = paths.warnings.map((w) => note('config', w));
  const dir = paths.dataDir;
  const fix = `set GUARDIAN_DATA_DIR to a folder you can write, or make ${dir} writable`;
  let existing = dir;
  for (;;) {
    try {
      const info = await stat(existing);
      if (!info.isDirectory()) {
        out.push(fail('data dir', `${existing} is not a folder`, fix));
        return out;
      }
      break;
    } catch (err: unknown) {
      if (errorCode(err) !== 'ENOENT' || path.dirname(existing) === existing) {
        out.push(fail('data dir', `${existing} cannot be read (${errorCode(err)})`, fix));
        return out;
      }
      // Not there yet: the first write creates it, so its nearest existing parent must be writable.
      existing = path.dirname(existing);
    }
  }
  try {
    await access(existing, constants.W_OK);
  } catch (err: unknown) {
    out.push(fail('data dir', `${existing} is not writable (${errorCode(err)})`, fix));
    return out;
  }
  out.push(
    ok(
      'data dir',
      existing === dir ? `${dir} (writable)` : `${dir} (not created yet; ${existing} is writable)`,
    ),
  );
  return out;
}

/**
 * The --verify check over the archive, summarised in one line: the local span folder, or (team mode) the caller's
 * runs read through the sidecar. `where` names it in the report.
 */
export async function checkArchive(source: ArchiveSource, where: string): Promise<CheckResult> {
  let runs: RunVerdict[];
  try {
    runs = (await sealAll(source)).runs;
  } catch (err: unknown) {
    // A fresh install has no span folder until the first compaction: nothing to verify is not a fault.
    if (errorCode(err) === 'ARCHIVE_NOT_FOUND') return note('archive', `no archive yet at ${where}`);
    if (err instanceof GuardianClientError) {
      const refused = err.status === 401 || err.status === 403;
      return fail(
        'archive',
        `cannot read the archive through ${where} (${err.code}: ${err.message})`,
        refused
          ? 'set GUARDIAN_TOKEN to your developer token (docs/team.md)'
          : 'see the sidecar log, or check --url / GUARDIAN_URL',
      );
    }
    throw err;
  }
  if (runs.length === 0) return note('archive', `no runs yet in ${where}`);
  const spans = runs.reduce((sum, r) => sum + r.lines, 0);
  const broken = runs.filter((r) => r.break !== null);
  const first = broken[0];
  if (first?.break) {
    return fail(
      'archive',
      `BREAK in ${broken.length} of ${runs.length} run(s): ${first.run} ${first.break.kind}`,
      `context-guardian-recall --verify for the detail; --repair ${first.run} seals or quarantines a torn tail`,
    );
  }
  return ok('archive', `${runs.length} run(s), ${spans} chain line(s) verify OK`);
}
