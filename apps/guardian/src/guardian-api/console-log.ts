import { Injectable } from '@nestjs/common';

import { ownerHash, readDailyLogs } from '@guardian/archive';

import type { Viewer } from '../access/access-policy';
import { TokenRegistry } from '../access/token-registry';
import { GuardianConfig } from '../config/guardian-config';
import { ConsoleLogLine, type ConsoleLogRow } from './console-figures';

/**
 * The console's one source (ADR 0025): the compaction log on the volume, the lines `recall --savings` adds up, read
 * when a page asks and scoped to the caller. Nothing is copied into a second store, so the chart, the sessions and
 * the usage survive a restart and agree with the CLI by construction.
 */
@Injectable()
export class ConsoleLog {
  constructor(
    private readonly config: GuardianConfig,
    private readonly tokens: TokenRegistry,
  ) {}

  /** The viewer's log lines since `since`: a developer's own, the admin's (or an open sidecar's) every line. */
  async rows(viewer: Viewer, since: Date): Promise<ConsoleLogRow[]> {
    const { rows } = await readDailyLogs(this.config.paths.logDir, since, ConsoleLogLine);
    if (viewer.kind === 'all') return rows;
    return rows.filter((r) => r.owner_hash === viewer.ownerHash);
  }

  /** Owner names by owner hash, from the tokens file now in use (the log keeps hashes only). */
  ownerNames(): Map<string, string> {
    return new Map(this.tokens.ownerNames().map((name) => [ownerHash(name), name]));
  }
}
