import type { CliConfig } from '../common/cli-config';
import type { CliIo } from '../common/cli-io';
import type { RecallFlags } from './recall-options';

/** What every recall command receives. */
export interface RecallContext {
  io: CliIo;
  config: CliConfig;
  flags: RecallFlags;
  replica: string;
}
