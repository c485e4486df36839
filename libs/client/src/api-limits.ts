/**
 * The bounds of the recall API (docs/team.md "Bounds"): every listing is a page, every answer has a cap, and a
 * search stops at a time limit with what it found. A client asks for less, never for more.
 */
export const ARCHIVE_API_LIMITS = {
  runs: { default: 100, max: 500 },
  spans: { default: 500, max: 1000 },
  seal: { default: 20, max: 100 },
  digests: { default: 20, max: 100 },
  digestTokens: { default: 400, max: 4000 },
  searchHits: { default: 20, max: 100 },
  readChars: { default: 20_000, max: 200_000 },
  /** A search over a big shared volume answers within this, `complete: false` when it had to stop. */
  searchMs: 5000,
} as const;
