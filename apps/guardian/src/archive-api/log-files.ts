import {
  ArchiveError,
  CHECKPOINT_FILE,
  VKEY_FILE,
  listLogs,
  logFolder,
  parseTilePath,
  peekCheckpoint,
  readLogFile,
} from '@guardian/archive';
import type { LogsAnswer } from '@guardian/client';

import type { Viewer } from '../access/access-policy';

function notFound(what: string): ArchiveError {
  return new ArchiveError('ARCHIVE_NOT_FOUND', `${what} not found`);
}

/**
 * The logs on the span volume as static files (C2SP tlog-tiles: `checkpoint`, `tile/<L>/<N>[.p/<W>]`,
 * `tile/entries/<N>[.p/<W>]`), plus the verifier key. Hash tiles, checkpoints and keys go to every archive reader: a
 * hash says nothing about a span. Entry bundles name every owner's runs, so in team mode only the admin reads them;
 * an owner proves their own spans with the tlog-proof bundle each answer carries.
 */
export class LogFiles {
  constructor(
    private readonly spanDir: string,
    /** This sidecar's log name (its replica tag). */
    readonly own: string,
  ) {}

  async list(viewer: Viewer): Promise<LogsAnswer> {
    const logs: LogsAnswer['logs'] = [];
    for (const name of await listLogs(this.spanDir)) {
      const dir = logFolder(this.spanDir, name);
      const note = await readLogFile(dir, CHECKPOINT_FILE);
      const vkey = await readLogFile(dir, VKEY_FILE);
      const c = note === null ? null : peekCheckpoint(note.toString('utf8'));
      logs.push({
        name,
        origin: c?.origin ?? null,
        size: c?.size ?? null,
        vkey: vkey?.toString('utf8').trim() ?? null,
        own: name === this.own,
        entries_served: viewer.kind === 'all',
      });
    }
    return { logs };
  }

  /** A file of log `name` (`checkpoint`, `vkey` or a tile path); ARCHIVE_NOT_FOUND for anything else. */
  async file(name: string, rel: string, viewer: Viewer): Promise<Buffer> {
    if (!/^[A-Za-z0-9_-]{1,80}$/.test(name)) throw notFound('log');
    const tile = rel === CHECKPOINT_FILE || rel === VKEY_FILE ? null : parseTilePath(rel);
    if (tile === null && rel !== CHECKPOINT_FILE && rel !== VKEY_FILE) throw notFound('log file');
    if (tile?.level === 'entries' && viewer.kind !== 'all') throw notFound('entry bundle');
    const bytes = await readLogFile(logFolder(this.spanDir, name), rel);
    if (bytes === null) throw notFound(`log file ${rel}`);
    return bytes;
  }
}
