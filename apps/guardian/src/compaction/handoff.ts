import type { IncomingHttpHeaders } from 'node:http';

import type { BudgetInfo, Counter } from '@guardian/compaction';
import type { HeaderMap } from '@guardian/upstream';

import type { FormatAdapter, ParsedConversation } from '../formats/format-adapter';
import type { OwnedRoute } from '../formats/owned-route';
import type { WindowInfo } from '../state/guardian-state';

// The values one stage of compaction hands the next (ARCHITECTURE.md#request-path): the request stage (request/)
// reads and measures, the decide stage (decide/) decides what is forwarded, the answer stage (answer/) follows the
// answer. This file sits below all three and imports none of them.

/** Why a sent header was not used; also the `reason` label of `guardian_session_header_ignored_total`. */
export type IgnoredReason = 'empty' | 'repeated' | 'too_long';

/**
 * Which header named the session (docs/sessions.md): guardian's own, or a client's own session id, read when
 * `X-Guardian-Session` is absent (issue 28 item 1); `derived` is the hash fallback.
 */
export type SessionSource =
  'x-guardian-session' | 'x-claude-code-session-id' | 'session-id' | 'thread-id' | 'derived';

/** What a request's `X-Guardian-Session` header lines amount to (docs/sessions.md, "How the header is read"). */
export type SessionHeader =
  | { kind: 'absent' }
  | { kind: 'value'; value: string; source?: SessionSource }
  | { kind: 'ignored'; reason: IgnoredReason; detail: string; warning: string };

export interface ResolvedSession {
  /**
   * The raw key: the header value, or `derived:<hash>`; in team mode `<owner>/<that>`. Never shown:
   * `/guardian/usage?session=` looks it up.
   */
  key: string;
  /** sha256 hex of the key (and owner): used in paths, memo keys and logs. */
  hash: string;
  /** Team mode: the owner hash of the token that sent the request (run.json, spans, log lines, usage). */
  ownerHash?: string;
  fromHeader: boolean;
  /** The header the key came from, or `derived`. */
  source?: SessionSource;
  /** Set when a header was sent but ignored; answered as an X-Guardian-Warning. */
  ignored?: { reason: IgnoredReason; warning: string };
  /** The header value the session was sent with (without the owner): the name the dashboard shows. */
  name?: string;
}

/** How a count was had: `tokenize+estimate` is the upstream's exact count of the messages plus the estimated tools. */
export type CountSource = 'tokenize' | 'tokenize+estimate' | 'calibrated' | 'estimate';

export interface RequestCount {
  tokens: number;
  /** The uncalibrated estimate (chars / GUARDIAN_CHARS_PER_TOKEN), what calibration samples compare against. */
  rawEstimate: number;
  source: CountSource;
  counter: Counter;
}

/** What the rule reads from one answered request. */
export interface UsageCandidate {
  /** Tools the request offers the model. */
  tools: number;
  /** `max_tokens`, `max_completion_tokens` or `max_output_tokens`, when the request sets one. */
  maxOutputTokens?: number;
}

export interface PrepareInput {
  route: OwnedRoute;
  url: string;
  headers: IncomingHttpHeaders;
  /** The headers that go upstream (requestHeadersForUpstream), computed once at the edge. */
  upstreamHeaders: HeaderMap;
  body: Buffer;
  /** X-Guardian-Session as read once at the edge (it also decides a GUARDIAN_SESSION_HEADER_REQUIRED refusal). */
  sessionHeader: SessionHeader;
  /** Team mode: the owner X-Guardian-Token named (apps/guardian/src/access). */
  owner?: { owner?: string; ownerHash?: string };
  signal: AbortSignal;
  reqId: string;
}

/** Everything known about one request once it is parsed and counted. */
export interface RequestContext {
  input: PrepareInput;
  adapter: FormatAdapter;
  conv: ParsedConversation;
  session: ResolvedSession;
  window: WindowInfo;
  budget: BudgetInfo;
  count: RequestCount;
  /** Credentials only, for guardian's own upstream calls. */
  auth: HeaderMap;
  dryRun: boolean;
  /** Why this request is being compacted: over the budget, or rejected by the upstream as too long (a retry). */
  reason?: 'budget' | 'overflow';
}

/** The outcome of compaction for one request: what to forward and what to report. */
export interface Decision {
  outcome: 'passthrough' | 'compacted' | 'reused' | 'spilled' | 'fail_open' | 'dry_run';
  /** Bytes to forward; undefined means the client's bytes unchanged. */
  body?: Buffer;
  tokensBefore: number;
  tokensAfter: number;
  /** Raw (uncalibrated) estimate of what is forwarded, for calibration samples. */
  rawForwarded: number;
  compactedAt?: string;
  /** The newest message the user typed was itself cut to fit (ARCHITECTURE.md#compaction): the client is told. */
  newestCut?: NewestCut;
}

/** What was cut from the newest message: told to the client in `X-Guardian-Newest-Cut` and a `newest_cut` event. */
export interface NewestCut {
  originalTokens: number;
  omittedTokens: number;
  /** The span that holds the whole message, when it could be archived. */
  ref?: string;
}

/** What the bookkeeping of one answer needs to know about its request, however the request was decided. */
export interface AnswerFacts {
  sessionHash: string;
  /** The name the session was sent with, for its usage record (the dashboard's sessions view). */
  sessionName?: string;
  /** Team mode: the owner hash of the token that sent the request. */
  ownerHash?: string;
  /** What named the session (the header it came from, or `derived`): shown in the usage and the stats. */
  sessionSource?: SessionSource;
  model: string;
  route: OwnedRoute;
  window: number;
  countSource: CountSource;
  candidate: UsageCandidate;
  /** The request's items, for the capture journal (only the full path has them; the fast path skips capture). */
  items?: unknown[];
  /** A sent session header that was not used: answered as an X-Guardian-Warning. */
  ignoredWarning?: { warning: string };
}

/**
 * One owned request as compaction prepared it, the one value the three paths make: the fast path (decided from the
 * body's size, no `ctx`), the full path (read, measured, decided) and the overflow retry (the full path's value with
 * the retry's decision). The answer stage follows the value whose `body` went upstream last.
 */
export interface PreparedRequest {
  readonly input: PrepareInput;
  readonly adapter: FormatAdapter;
  /** The bytes that go upstream: the decision's, or the client's unchanged. */
  readonly body: Buffer;
  /** Parsed and measured; absent on the fast path (ADR 0013) and for a body the engine does not understand. */
  readonly ctx?: RequestContext;
  readonly decision?: Decision;
  /** What the answer's bookkeeping needs; absent when the body was not understood (nothing to keep). */
  readonly facts?: AnswerFacts;
  /** Decided by the fast path: a refusal that needs the parsed request has it read first. */
  readonly fast: boolean;
}

/** The value of a request, its body taken from its decision. */
export function preparedRequest(
  fields: Omit<PreparedRequest, 'body' | 'fast'> & { fast?: boolean },
): PreparedRequest {
  return {
    input: fields.input,
    adapter: fields.adapter,
    body: fields.decision?.body ?? fields.input.body,
    ctx: fields.ctx,
    decision: fields.decision,
    facts: fields.facts,
    fast: fields.fast === true,
  };
}
