// Waiting in tests without letting the clock decide the verdict (HOUSE "Tests": the same verdict on a busy 2-core
// machine). A test waits for an event: a state it polls, a line it reads, a process that exits. How long it waits
// is only a safeguard against a hang, never the thing asserted, so it is set far beyond anything a busy machine
// needs (`npm test` has taken 32 minutes on one, where a quiet machine takes under ten). A speed belongs in bench/.
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a test waits for something that must come before it gives up: 5 minutes, a hang guard only. */
export const MUST_COME_MS = 5 * 60_000;

/** Polls `check` until it holds; throws naming `what` only when MUST_COME_MS passes first (a hang). */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  everyMs = 25,
): Promise<void> {
  const giveUp = Date.now() + MUST_COME_MS;
  while (!(await check())) {
    if (Date.now() > giveUp) throw new Error(`still waiting for ${what} after ${MUST_COME_MS} ms: a hang`);
    await sleep(everyMs);
  }
}
