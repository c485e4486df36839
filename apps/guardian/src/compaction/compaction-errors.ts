import { CodedError, codeOf } from '@guardian/errors';
import type { FailOpenStage } from '@guardian/telemetry';

/**
 * A failure thrown up to the fail-open catch by the site that knows which stage it belongs to
 * (docs/ARCHITECTURE.md#fail-open rule 1): the stage is named where the error is understood, not guessed later from
 * the prefix of its code. Anything else that reaches the catch is `internal`.
 */
export class StageFailure extends CodedError<string> {
  override readonly name = 'StageFailure';

  constructor(
    readonly stage: FailOpenStage,
    readonly original: CodedError<string>,
  ) {
    super(original.code, original.message, { cause: original });
  }
}

/** Where a fail-open belongs and why, for the counter, the event and the log line. */
export function failOpenOf(err: unknown): { stage: FailOpenStage; reason: string; err: unknown } {
  if (err instanceof StageFailure) return { stage: err.stage, reason: reasonOf(err), err: err.original };
  return { stage: 'internal', reason: reasonOf(err), err };
}

/** The lower-case code of a coded or system error, else `exception`: the `reason` a fail-open is logged once by. */
export function reasonOf(err: unknown): string {
  return (codeOf(err) ?? 'exception').toLowerCase();
}
