import { codeOf } from '@guardian/errors';

/** How a check came out. `note` and `skip` do not fail the run; `fail` does and always carries a fix. */
export type CheckStatus = 'ok' | 'note' | 'skip' | 'fail';

/** One line of the doctor's report. */
export interface CheckResult {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to do about it: set when status is `fail`. */
  fix?: string;
}

const LABEL: Record<CheckStatus, string> = { ok: 'ok', note: 'note', skip: 'skip', fail: 'FAIL' };

/** `ok    node       v20.19.0 ...`, then `      fix: ...` under a failure. */
export function renderCheck(check: CheckResult): string {
  const line = `${LABEL[check.status].padEnd(5)} ${check.name.padEnd(10)} ${check.detail}`;
  return check.fix === undefined ? line : `${line}\n      fix: ${check.fix}`;
}

export function ok(name: string, detail: string): CheckResult {
  return { name, status: 'ok', detail };
}

export function note(name: string, detail: string): CheckResult {
  return { name, status: 'note', detail };
}

export function skip(name: string, detail: string): CheckResult {
  return { name, status: 'skip', detail };
}

export function fail(name: string, detail: string, fix: string): CheckResult {
  return { name, status: 'fail', detail, fix };
}

/** A stable code of an error, read structurally (fs and undici errors carry one). */
export function errorCode(err: unknown): string {
  return codeOf(err) ?? (err instanceof Error ? err.name : 'error');
}
