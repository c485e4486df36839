import { z } from 'zod';

import { CliUsageError } from '../common/cli-error';

const RunId = z.string().regex(/^[A-Za-z0-9_-]{1,80}$/, 'run ids match ^[A-Za-z0-9_-]{1,80}$');

/** The flags commander hands over, validated once (HOUSE rule 2). */
export const RecallFlagsSchema = z.object({
  run: RunId.optional(),
  session: z.string().min(1).max(256).optional(),
  json: z.boolean().default(false),
  max: z.coerce.number().int().min(1).max(1000).default(20),
  verify: z.boolean().default(false),
  all: z.boolean().default(false),
  heads: z.boolean().default(false),
  sealExisting: z.boolean().default(false),
  prune: z.boolean().default(false),
  repair: RunId.optional(),
  reindex: z.boolean().default(false),
  receipts: z.boolean().default(false),
  share: z.boolean().default(false),
  savings: z.boolean().default(false),
  logKey: z.boolean().default(false),
  since: z.string().default('7d'),
  url: z.url({ protocol: /^https?$/ }).optional(),
});
export type RecallFlags = z.infer<typeof RecallFlagsSchema>;

export type RecallMode =
  | 'search'
  | 'verify'
  | 'heads'
  | 'seal-existing'
  | 'prune'
  | 'repair'
  | 'reindex'
  | 'receipts'
  | 'savings'
  | 'log-key';

/** Modes that change the archive: they run where the span folder is, never through the sidecar's read-only API. */
export const MAINTENANCE_MODES: readonly RecallMode[] = ['seal-existing', 'prune', 'repair', 'reindex'];

/** Exactly one mode per call: a term (search) or one of the mode flags. */
export function pickMode(term: string | undefined, flags: RecallFlags): RecallMode {
  const modes: RecallMode[] = [];
  if (flags.verify) modes.push('verify');
  if (flags.heads) modes.push('heads');
  if (flags.sealExisting) modes.push('seal-existing');
  if (flags.prune) modes.push('prune');
  if (flags.repair !== undefined) modes.push('repair');
  if (flags.reindex) modes.push('reindex');
  if (flags.receipts) modes.push('receipts');
  if (flags.savings) modes.push('savings');
  if (flags.logKey) modes.push('log-key');
  if (modes.length > 1) throw new CliUsageError(`choose one of --${modes.join(', --')}`);
  const mode = modes[0];
  if (mode !== undefined) {
    if (term !== undefined) throw new CliUsageError(`a search term cannot be combined with --${mode}`);
    if (flags.all && flags.run !== undefined) throw new CliUsageError('--all and --run exclude each other');
    return mode;
  }
  if (term === undefined || term.trim() === '')
    throw new CliUsageError('give a search term or a mode such as --verify');
  return 'search';
}
