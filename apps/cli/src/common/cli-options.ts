import { InvalidArgumentError } from 'commander';

/**
 * `--timeout <seconds>` for the commands that call the sidecar. Imports commander only, so the status line
 * (which runs on every prompt) can share it without loading anything heavier.
 */
export function parseTimeoutSeconds(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 60) {
    throw new InvalidArgumentError('expected seconds between 0 and 60');
  }
  return seconds;
}
