/** The lower-case `code` of a coded error (SummariseError, MemoError, ArchiveError, ...), else `exception`. */
export function codeOf(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') {
    return err.code.toLowerCase();
  }
  return 'exception';
}

/** The fail-open stage a compaction error belongs to, from its code's prefix. */
export function stageOf(err: unknown): 'summarise' | 'memo' | 'archive' | 'internal' {
  const code = codeOf(err);
  if (code.startsWith('summary') || code.startsWith('transcript')) return 'summarise';
  if (code.startsWith('memo')) return 'memo';
  if (code.startsWith('archive')) return 'archive';
  return 'internal';
}
