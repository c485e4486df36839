/** Streams, environment and clock a CLI uses; tests pass their own. */
export interface CliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: Record<string, string | undefined>;
  home: string;
  now: () => Date;
}

/** Prints a value as one JSON document (`--json`). */
export function printJson(io: CliIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * A progress callback for long work (verify, reindex, seal-existing) that writes to stderr only when stderr
 * is a terminal (HOUSE rule 12), so pipes and scripts see clean output.
 */
export function progress(io: CliIo, label: string): ((done: number, total: number) => void) | undefined {
  if (io.stderr.isTTY !== true) return undefined;
  return (done, total) => {
    io.stderr.write(`\r${label} ${done}/${total}${done === total ? '\n' : ''}`);
  };
}

/** 145332 -> "145,332" (the seed's figures). */
export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}
