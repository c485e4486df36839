import { ArchiveError } from './archive-error';
import { FolderAppender } from './durable-fs';

/** One line per compaction or spill (ARCHITECTURE.md#files). No message text, no header values. */
export interface CompactionLogLine {
  ts: string;
  replica: string;
  run: string | null;
  span: number | null;
  session_hash: string;
  owner_hash: string | null;
  route: string;
  model: string;
  window: number;
  tokens_before: number;
  tokens_after: number;
  count_source: string;
  evicted_messages: number;
  summary_reused: boolean;
  summariser_calls: number;
  chunked: boolean;
  /** Messages cut to head + tail in this request (0 when none). */
  oversized_spilled: number;
  pins: number;
  archive_deferred: boolean;
  dry_run: boolean;
}

export type CompactionLogInput = Omit<CompactionLogLine, 'ts' | 'replica'> & { ts?: string };

/** `yyyymmdd` of a date in UTC; log and receipt files roll over at UTC midnight. */
export function utcDay(date: Date): string {
  return date.toISOString().slice(0, 10).replace(/-/g, '');
}

/** Appends compaction lines to `<logDir>/<replica>-<yyyymmdd>.jsonl` (one file per replica, ARCHITECTURE.md#files). */
export class CompactionLog {
  private readonly now: () => Date;
  private readonly folder: FolderAppender;

  constructor(
    private readonly opts: {
      logDir: string;
      replica: string;
      now?: () => Date;
      /** Milliseconds an append waits for others before they are written with one fsync (FolderAppender). */
      gatherMs?: number;
    },
  ) {
    this.now = opts.now ?? (() => new Date());
    this.folder = new FolderAppender(opts.logDir, opts.gatherMs ?? 0);
  }

  async append(input: CompactionLogInput): Promise<CompactionLogLine> {
    const at = this.now();
    const line: CompactionLogLine = {
      ...input,
      ts: input.ts ?? at.toISOString(),
      replica: this.opts.replica,
    };
    try {
      await this.folder.append(`${this.opts.replica}-${utcDay(at)}.jsonl`, `${JSON.stringify(line)}\n`);
    } catch (cause) {
      throw new ArchiveError('ARCHIVE_WRITE_FAILED', 'compaction log line not written', { cause });
    }
    return line;
  }
}
