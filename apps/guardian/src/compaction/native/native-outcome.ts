import type { UpstreamResponse } from '@guardian/upstream';

import type { GuardianError } from '../../http/http-error';

/**
 * What guardian does with a request that speaks a compaction protocol (docs/native-compaction.md): refuse it, answer
 * it, or forward a rewritten body, with what the backend's answer needs added (`answer`: Anthropic's applied edits and
 * block, a Responses compaction item).
 */
export type NativeOutcome =
  | { kind: 'refuse'; error: GuardianError }
  | { kind: 'answer'; contentType: string; body: string }
  | { kind: 'forward'; body: Buffer; answer?: (upstream: UpstreamResponse) => UpstreamResponse };

export function json_(body: unknown): NativeOutcome {
  return { kind: 'answer', contentType: 'application/json', body: JSON.stringify(body) };
}
