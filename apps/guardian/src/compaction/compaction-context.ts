import type { IncomingHttpHeaders } from 'node:http';

import type { BudgetInfo } from '@guardian/compaction';
import type { HeaderMap } from '@guardian/upstream';

import type { OwnedRoute } from '../formats/owned-route';
import type { WindowInfo } from '../state/guardian-state';
import type { FormatAdapter, ParsedConversation } from '../formats/format-adapter';
import type { RequestCount } from './request-counter';
import type { ResolvedSession, SessionHeader } from './session';

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
}
