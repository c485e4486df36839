import type { UsageRecord } from '@guardian/memo';

import type { Json } from '../../formats/format-adapter';
import type { UsageCandidate } from '../handoff';

// Which answered request a session's usage follows (ADR 0010, docs/sessions.md "What the status line shows").
// Pure: the caller passes the clock, so the rule is tested without waiting.

/** A request for at most this many output tokens is a probe: nobody reads its answer, only its token count. */
export const PROBE_MAX_OUTPUT_TOKENS = 16;
/** A main conversation silent this long is taken as left behind, and a helper request may take the line over. */
export const MAIN_QUIET_MS = 10 * 60 * 1000;

export type UsageChoice =
  { follow: true } | { follow: false; kind: 'probe' } | { follow: false; kind: 'helper' };

/**
 * Whether `candidate` replaces `shown` as the session's usage. A probe (Claude Code's `/context` counts tokens with
 * `max_tokens: 1` generations when the backend has no count_tokens) never does once something is shown. A helper, a
 * request offering fewer tools than the one shown (title requests, sub-agents, Qwen Code's follow-up request), does
 * only after the shown request has been quiet for MAIN_QUIET_MS. Anything else does: the latest main request wins,
 * so a new conversation (after `/clear`) shows from its first request.
 */
export function chooseUsage(
  shown: Pick<UsageRecord, 'tools' | 'at'> | undefined,
  candidate: UsageCandidate,
  nowMs: number,
): UsageChoice {
  if (shown === undefined) return { follow: true };
  const max = candidate.maxOutputTokens;
  if (max !== undefined && max <= PROBE_MAX_OUTPUT_TOKENS) return { follow: false, kind: 'probe' };
  // A record written before this rule has no tool count: it is replaced as before.
  if (candidate.tools < (shown.tools ?? 0)) {
    // An unreadable time counts as quiet: a line that can never move again would be worse than one helper shown.
    const shownAt = Date.parse(shown.at);
    if (!Number.isNaN(shownAt) && nowMs - shownAt < MAIN_QUIET_MS) return { follow: false, kind: 'helper' };
  }
  return { follow: true };
}

/** Reads the rule's inputs from a parsed request body of any of the three routes. */
export function usageCandidate(json: Json): UsageCandidate {
  const tools = Array.isArray(json.tools) ? json.tools.length : 0;
  for (const key of ['max_tokens', 'max_completion_tokens', 'max_output_tokens']) {
    const v = json[key];
    if (typeof v === 'number' && Number.isFinite(v)) return { tools, maxOutputTokens: v };
  }
  return { tools };
}
