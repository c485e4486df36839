import type { GuardianError } from '../../http/http-error';
import type { AnswerEdit } from './answer-edit';

/** What guardian does with a request that speaks a compaction protocol (docs/native-compaction.md). */
export type NativeOutcome =
  | { kind: 'refuse'; error: GuardianError }
  | { kind: 'answer'; contentType: string; body: string }
  | { kind: 'forward'; body: Buffer; answer?: AnswerEdit };

export function json_(body: unknown): NativeOutcome {
  return { kind: 'answer', contentType: 'application/json', body: JSON.stringify(body) };
}
