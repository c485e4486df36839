import type { ArchiveSource } from '@guardian/archive';

import type { CliConfig } from '../common/cli-config';
import type { CliIo } from '../common/cli-io';
import type { RecallFlags } from './recall-options';

/** What every recall command receives. */
export interface RecallContext {
  io: CliIo;
  config: CliConfig;
  flags: RecallFlags;
  replica: string;
  /** The archive the reading modes use: the local span folder, or (team mode) the caller's runs through the sidecar. */
  archive: ArchiveSource;
  /** Where the archive was read, for messages: the span folder or the sidecar's URL. */
  where: string;
}
