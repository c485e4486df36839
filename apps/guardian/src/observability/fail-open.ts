import { Injectable } from '@nestjs/common';

import { GuardianMetrics, logOnce, type FailOpenStage, type Route } from '@guardian/telemetry';

import { GuardianState } from '../state/guardian-state';
import { GuardianLogger } from './guardian-logger';

/**
 * A fail-open is a designed path (ARCHITECTURE.md#fail-open): counted by stage, an event, and ONE log line per
 * (stage, reason) so a failing summariser does not flood the log. Every stage's reporter reports its fail-opens
 * here; this is the only writer of `guardian_fail_open_total`.
 */
@Injectable()
export class FailOpen {
  constructor(
    private readonly state: GuardianState,
    private readonly metrics: GuardianMetrics,
    private readonly logger: GuardianLogger,
  ) {}

  report(
    stage: FailOpenStage,
    reason: string,
    ctx: { route: Route; model?: string; reqId?: string; err?: unknown },
  ): void {
    this.metrics.failOpen.inc({ stage });
    this.state.emit({ kind: 'fail_open', route: ctx.route, model: ctx.model, stage, reason });
    const err =
      ctx.err instanceof Error ? ctx.err.message : typeof ctx.err === 'string' ? ctx.err : undefined;
    logOnce(
      this.logger,
      `fail_open:${stage}:${reason}`,
      { stage, reason, route: ctx.route, reqId: ctx.reqId, err },
      `${failOpenMessage(stage, reason)} (logged once per stage and reason)`,
    );
  }
}

/** Side writes that happen after the request has gone on: their failure changes nothing for it. */
const AFTER_FORWARD = new Set([
  'usage_write',
  'usage_log_write',
  'log_write',
  'receipt_write',
  'journal_write',
]);

/**
 * What a fail-open did to the request, in words an operator can act on. Not every stage forwards the client's
 * bytes: a span that cannot be written still lets the request go on compacted (ARCHITECTURE.md#fail-open rule 3), and
 * the line used to say "unchanged" there (issue 12 defect 8).
 */
export function failOpenMessage(stage: FailOpenStage, reason: string): string {
  if (AFTER_FORWARD.has(reason))
    return `a ${reason.replace('_', ' ')} failed after the request was forwarded; the request is not affected`;
  if (reason === 'log_entries_dropped')
    return 'the span log cannot open and 10,000 entries wait for it: further entries are dropped (the spans stay sealed), and the next sidecar started on this host logs them';
  if (reason === 'handle_key_ephemeral')
    return 'the handle key could not be made on the data volume: compaction handles are sealed with a key of this process only';
  if (reason === 'count_forecast')
    return "a token count's forecast failed: the count is answered without X-Guardian-Would-Forward";
  if (stage === 'archive')
    return 'a span could not be archived: the request goes upstream compacted and the span is deferred to a later turn';
  if (stage === 'recovery') return "overflow recovery failed open: the client gets the upstream's own answer";
  return 'compaction failed open: the request goes upstream unchanged';
}
