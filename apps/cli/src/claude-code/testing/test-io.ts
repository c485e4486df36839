import type { HookIo } from '../hook-io';

/** A HookIo over strings and a settable clock, for in-process tests of the Claude Code commands. */
export interface TestIo extends HookIo {
  out: () => string;
  err: () => string;
  setStdin: (text: string) => void;
  setNow: (date: Date) => void;
}

export function testIo(opts: {
  home: string;
  dataDir: string;
  cwd?: string;
  env?: Record<string, string>;
  now?: Date;
}): TestIo {
  let out = '';
  let err = '';
  let stdin = '';
  let now = opts.now ?? new Date('2026-10-30T15:00:00Z');
  return {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s), isTTY: false },
    env: { GUARDIAN_DATA_DIR: opts.dataDir, ...opts.env },
    home: opts.home,
    now: () => now,
    readStdin: () => Promise.resolve(stdin),
    cwd: () => opts.cwd ?? opts.home,
    out: () => {
      const text = out;
      out = '';
      return text;
    },
    err: () => err,
    setStdin: (text) => (stdin = text),
    setNow: (date) => (now = date),
  };
}
