import { z } from 'zod';

import { ArchiveError } from './archive-error';
import { utcDay } from './compaction-log';
import { FolderAppender } from './durable-fs';
import { isoTimestamp } from './iso-time';

/**
 * One line per answered request (`answer`) and per summariser call (`summary`), with the tokens the backend's own
 * usage reported (ARCHITECTURE.md#files). The compaction log has a line only where guardian compacted; what the
 * model wrote back and what summaries cost happen on every request, so they have a log of their own. No message
 * text, no header values.
 */
export interface UsageLogLine {
  ts: string;
  replica: string;
  kind: 'answer' | 'summary';
  owner_hash: string | null;
  route: string;
  /** The conversation's model (a summary is counted under the model of the conversation it summarised). */
  model: string;
  /** The backend's prompt tokens; null when its answer reported no usage (a chat stream without include_usage). */
  tokens_in: number | null;
  /** The backend's completion (output) tokens; null when its answer reported none. */
  tokens_out: number | null;
}

export type UsageLogInput = Omit<UsageLogLine, 'ts' | 'replica'>;

/** The fields every reader of the usage log adds up; other fields are ignored, a line that does not match is skipped. */
export const UsageLogLineSchema = z.looseObject({
  ts: z.string(),
  kind: z.enum(['answer', 'summary']),
  owner_hash: z.string().nullish(),
  model: z.string().default(''),
  tokens_in: z.number().nullish(),
  tokens_out: z.number().nullish(),
});
export type UsageLogRow = z.infer<typeof UsageLogLineSchema>;

/** What the usage log adds up to over some rows: the one rule `recall --savings` and the console share. */
export interface UsageTotals {
  /** Answered requests logged. */
  answers: number;
  /** Of those, the ones whose answer carried no usage: their tokens are unknown, not zero. */
  answers_without_usage: number;
  tokens_in: number;
  tokens_out: number;
  summariser_tokens_in: number;
  summariser_tokens_out: number;
}

export function emptyUsageTotals(): UsageTotals {
  return {
    answers: 0,
    answers_without_usage: 0,
    tokens_in: 0,
    tokens_out: 0,
    summariser_tokens_in: 0,
    summariser_tokens_out: 0,
  };
}

/** Adds one usage log row to `into`. */
export function addUsageRow(into: UsageTotals, row: UsageLogRow): void {
  const tokensIn = row.tokens_in ?? 0;
  const tokensOut = row.tokens_out ?? 0;
  if (row.kind === 'summary') {
    into.summariser_tokens_in += tokensIn;
    into.summariser_tokens_out += tokensOut;
    return;
  }
  into.answers += 1;
  if (row.tokens_in == null && row.tokens_out == null) into.answers_without_usage += 1;
  into.tokens_in += tokensIn;
  into.tokens_out += tokensOut;
}

/** Appends usage lines to `<usageDir>/<replica>-<yyyymmdd>.jsonl`, like the compaction log (one file per replica). */
export class UsageLog {
  private readonly now: () => Date;
  private readonly folder: FolderAppender;
  /** The file of the last line's day, named again only when the day (its stamp's first ten characters) changes. */
  private file = { day: '', name: '' };

  constructor(
    private readonly opts: {
      usageDir: string;
      replica: string;
      now?: () => Date;
      /** Milliseconds an append waits for others before they are written with one fsync (FolderAppender). */
      gatherMs?: number;
    },
  ) {
    this.now = opts.now ?? (() => new Date());
    this.folder = new FolderAppender(opts.usageDir, opts.gatherMs ?? 0);
  }

  async append(input: UsageLogInput): Promise<UsageLogLine> {
    const at = this.now();
    // One line per answered request: the stamp is written out once (utcDay's own toISOString was a second one).
    const ts = isoTimestamp(at);
    const line: UsageLogLine = { ts, replica: this.opts.replica, ...input };
    const day = ts.slice(0, 10);
    if (day !== this.file.day) this.file = { day, name: `${this.opts.replica}-${utcDay(at)}.jsonl` };
    try {
      await this.folder.append(this.file.name, `${JSON.stringify(line)}\n`);
    } catch (cause) {
      throw new ArchiveError('ARCHIVE_WRITE_FAILED', 'usage log line not written', { cause });
    }
    return line;
  }
}

/** Prices per million tokens (GUARDIAN_COST_PER_1M_INPUT_USD, GUARDIAN_COST_PER_1M_OUTPUT_USD). */
export interface TokenPrices {
  inputPer1M: number;
  outputPer1M: number;
}

/**
 * The spend at the configured prices, to 1/100 of a cent: what was sent in (the answers' and the summaries') at the
 * input price, what the model wrote (completions and summaries) at the output price. The console and --savings both
 * price with this, so they agree to the cent as their tokens agree to the token.
 */
export function spendUsd(t: UsageTotals, prices: TokenPrices): number {
  const input = ((t.tokens_in + t.summariser_tokens_in) / 1_000_000) * prices.inputPer1M;
  const output = ((t.tokens_out + t.summariser_tokens_out) / 1_000_000) * prices.outputPer1M;
  return Math.round((input + output) * 10_000) / 10_000;
}
