import { Injectable, type OnModuleDestroy } from '@nestjs/common';

import { chooseCut, type PlanInput } from '@guardian/compaction';
import { MemoStore } from '@guardian/memo';
import type { PrecompactOutcome } from '@guardian/telemetry';

import { GuardianConfig } from '../../config/guardian-config';
import { reasonOf } from '../compaction-errors';
import type { Decision, RequestContext } from '../handoff';
import { conversationPrefixHashes } from '../request/conversation-reader';
import { requestPlanInput } from '../decide/compaction-engine';
import { PrecompactJobs, type PrecompactJob } from '../decide/precompact-jobs';
import { StretchService } from '../decide/stretch-service';
import { AnswerReporter } from './answer-reporter';

/** The memo lock a session's background job holds: a word, never a prefix hash, so never a stretch's lock. */
const PRECOMPACT_LOCK = 'precompact';

/**
 * Background pre-compaction (issue 14, ADR 0009): when a session's forwarded request passes
 * GUARDIAN_PRECOMPACT_THRESHOLD of its budget, after the answer has gone back, the stretch the next cut will evict is
 * summarised and memoized (in Redis when configured), so the turn that crosses the budget is a memo hit and no client
 * waits on the summariser. The cut comes from the same planner the foreground uses; the foreground takes it by
 * reusing the memo (the earliest memoized cut that fits), and a history that changed simply does not match it.
 * One job per session, across replicas (a lock in the memo), GUARDIAN_PRECOMPACT_CONCURRENCY in all per process; a
 * failure changes nothing for any client.
 */
@Injectable()
export class Precompactor implements OnModuleDestroy {
  private closing = false;

  constructor(
    private readonly config: GuardianConfig,
    private readonly stretches: StretchService,
    private readonly jobs: PrecompactJobs,
    private readonly reporter: AnswerReporter,
    private readonly memo: MemoStore,
  ) {}

  /** Called once a client's answer has ended well: starts a background summary when the request was big enough. */
  consider(ctx: RequestContext, d: Decision): void {
    const { summariser } = this.config;
    const threshold = summariser.precompact.threshold;
    if (threshold <= 0 || !summariser.memo || this.closing) return;
    if (ctx.dryRun || ctx.reason === 'overflow' || d.outcome === 'fail_open') return;
    if (d.tokensAfter < threshold * ctx.budget.budget) return;
    if (this.jobs.has(ctx.session.hash) || this.jobs.size >= summariser.precompact.concurrency) {
      this.count('busy');
      return;
    }
    const job: PrecompactJob = { cut: 0, abort: new AbortController(), done: Promise.resolve() };
    this.jobs.add(ctx.session.hash, job);
    this.reporter.precompactRunning(this.jobs.size);
    job.done = this.run(ctx, job, d.tokensAfter)
      .then((outcome) => this.count(outcome))
      .catch((err: unknown) => {
        if (job.abort.signal.aborted) return this.count('abandoned');
        this.count('failed');
        this.reporter.precompactFailed(reasonOf(err), ctx.conv.route, err);
      })
      .finally(() => {
        this.jobs.delete(ctx.session.hash);
        this.reporter.precompactRunning(this.jobs.size);
      });
  }

  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    const jobs = this.jobs.all();
    for (const job of jobs) job.abort.abort();
    await Promise.allSettled(jobs.map((j) => j.done));
  }

  private async run(
    ctx: RequestContext,
    job: PrecompactJob,
    forwardedTokens: number,
  ): Promise<PrecompactOutcome> {
    // The client's request is over: the job has its own signal, aborted when moot or at shutdown.
    const bg: RequestContext = {
      ...ctx,
      input: { ...ctx.input, signal: job.abort.signal },
      reason: 'budget',
    };
    // One job per session across replicas too: with turns alternating between pods, the next turn reached the other
    // replica while this one's summary was under way, and it summarised a stretch of its own (issue 30 item 7). The
    // lock outlives a summary that times out; a job still running past it costs a duplicate call, never an answer.
    const lock = await this.memo.lock(bg.session.hash, PRECOMPACT_LOCK, this.config.summariser.timeoutMs * 2);
    if (!lock) return 'busy';
    try {
      return await this.runLocked(bg, job, forwardedTokens);
    } finally {
      await lock.release();
    }
  }

  private async runLocked(
    bg: RequestContext,
    job: PrecompactJob,
    forwardedTokens: number,
  ): Promise<PrecompactOutcome> {
    const hashes = conversationPrefixHashes(bg.conv);
    const entries = await this.stretches.lookup(bg, hashes);
    const latest = entries.at(-1);
    // One stretch ahead at most: a summary made ahead of need and not used yet is enough.
    if (latest?.precomputed) return 'not_needed';
    const planned = requestPlanInput(bg, this.config.compaction, latest ? [latest] : []);
    const from = planned.memo?.cut ?? 0;
    // The cut the planner will take when the request crosses its budget, a few turns from now: the keep-recent cut
    // of that request, whose kept part will hold the turns still to come. So, from the end of this request, keep
    // that much less (the 4-message minimum still holds). A cut chosen from today's end would evict less than
    // the foreground will, and cost a summary every turn or two (docs/adr/0009-pre-compaction.md).
    const cut = chooseCut(aheadOfCrossing(planned.input, forwardedTokens), from);
    if (cut === undefined || !this.stretches.worthSummarising(bg, from, cut)) return 'not_needed';
    job.cut = cut;
    const made = await this.stretches.summarise(bg, hashes, planned.memo, from, cut, { precomputed: true });
    if (job.abort.signal.aborted) return 'abandoned';
    // The model could not summarise it (or its breaker is open): a checkpoint stands in, memoized like a summary.
    if (made.entry.checkpoint) return 'failed';
    // Another request or replica summarised this stretch meanwhile: nothing was made here.
    if (made.calls === 0) return 'not_needed';
    return 'done';
  }

  private count(outcome: PrecompactOutcome): void {
    this.reporter.precompact(outcome);
  }
}

/**
 * The planner input as it will be at the crossing: the keep-recent share less the room the forwarded request still
 * leaves below the budget (what the turns to come will fill).
 */
export function aheadOfCrossing(input: PlanInput, forwardedTokens: number): PlanInput {
  if (input.keep.messages !== undefined) return input;
  const span = input.budget.window - input.budget.reserve;
  const left = Math.max(0, input.budget.budget - forwardedTokens);
  const fraction = Math.max(0, input.keep.fraction * span - left) / span;
  return { ...input, keep: { fraction } };
}
