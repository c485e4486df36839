/** Exit codes every guardian CLI shares (issue 4 item 9). */
export const EXIT = {
  /** Hits found, or every checked run verifies. */
  OK: 0,
  /** No hits, or a break was found. */
  NONE: 1,
  /** A usage error, a bad id or age, or no archive at all. */
  USAGE: 2,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
