import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

import { errorCode, errorMessage } from './fs-errors';

/** One line of `claude-code/hooks.log`. No transcript text: codes, counts and paths only (HOUSE rule 9). */
export interface HookLogEntry {
  command: string;
  code: string;
  detail?: string;
  session?: string;
  [field: string]: string | number | boolean | undefined;
}

function describe(err: unknown): { code: string; detail: string } {
  return { code: errorCode(err), detail: errorMessage(err) };
}

/**
 * The hooks' log file. A hook must never fail Claude Code (exit 2 from PreCompact blocks compaction), so its
 * problems go here instead of to an exit code; a log that cannot be written goes to stderr, which Claude Code
 * shows only in verbose mode.
 */
export class HookLog {
  constructor(
    private readonly file: string,
    private readonly now: () => Date,
    private readonly stderr: { write(text: string): unknown },
  ) {}

  async write(entry: HookLogEntry): Promise<void> {
    const line = `${JSON.stringify({ ts: this.now().toISOString(), ...entry })}\n`;
    try {
      await fsp.mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
      await fsp.appendFile(this.file, line, { mode: 0o600 });
    } catch (err) {
      // Nowhere else to put it: stderr keeps the hook's exit code 0 (seed: "writes problems to its log").
      this.stderr.write(`context-guardian-claude-code: log not written (${describe(err).code}): ${line}`);
    }
  }

  async failure(
    command: string,
    err: unknown,
    extra: Omit<HookLogEntry, 'command' | 'code'> = {},
  ): Promise<void> {
    await this.write({ command, ...describe(err), ...extra });
  }
}
