/** The kinds of break --verify names (seed "Prove it"; docs/ARCHIVE_FORMAT.md §"Verification"). */
type BreakKind =
  | 'content-changed'
  | 'file-missing'
  | 'entry-edited'
  | 'entry-reordered'
  | 'chain-forked'
  | 'unsealed-file'
  | 'anchor-mismatch';

/** What a chain walk found wrong, and where. */
export interface ChainBreak {
  kind: BreakKind;
  /** The chain line where it was found, when it is tied to one. */
  seq: number | null;
  file: string | null;
  detail: string;
}
