import { Injectable, type OnModuleDestroy } from '@nestjs/common';

import { computeBudget, marginedBudget, planCompaction } from '@guardian/compaction';
import { MemoStore } from '@guardian/memo';
import type { PrecompactOutcome } from '@guardian/telemetry';

import { GuardianConfig } from '../../config/guardian-config';
import { reasonOf } from '../compaction-errors';
import type { Decision, RequestContext } from '../handoff';
import { conversationPrefixHashes } from '../../formats/format-adapter';
import { RequestCounter } from '../request/request-counter';
import { requestPlanInput } from '../decide/compaction-engine';
import { resultClearing } from '../decide/old-results';
import { conversationJob, PrecompactJobs, type PrecompactJob } from '../decide/precompact-jobs';
import { StretchService } from '../decide/stretch-service';
import { AnswerReporter } from './answer-reporter';

/**
 * The memo lock a conversation's background job holds: this word and the conversation's first prefix hash, so never
 * a stretch's lock (a bare prefix hash) nor an archive lock.
 */
const PRECOMPACT_LOCK = 'precompact';

/**
 * Background pre-compaction (issue 14, ADR 0009): when a session's forwarded request passes
 * GUARDIAN_PRECOMPACT_THRESHOLD of its budget, after the answer has gone back, the stretch the next turn's cut will
 * evict is summarised and memoized (in Redis when configured), so the turn that needs it finds it made and no client
 * waits on the summariser. The cut is the planner's own (planCompaction, the one the foreground runs) for the request
 * the next turn will send, projected from this one (nextTurnMessages); the foreground plans its own request and takes
 * the summary only where it cuts there too, and a history that changed simply does not match it.
 * One job per conversation, across replicas (a lock in the memo), GUARDIAN_PRECOMPACT_CONCURRENCY in all per process;
 * a failure changes nothing for any client.
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
    private readonly counter: RequestCounter,
  ) {}

  /** Called once a client's answer has ended well: starts a background summary when the request was big enough. */
  consider(ctx: RequestContext, d: Decision): void {
    const { summariser } = this.config;
    const threshold = summariser.precompact.threshold;
    if (threshold <= 0 || !summariser.memo || this.closing) return;
    if (ctx.dryRun || ctx.reason === 'overflow' || d.outcome === 'fail_open') return;
    if (d.tokensAfter < threshold * ctx.budget.budget) return;
    const hashes = conversationPrefixHashes(ctx.conv);
    const conversation = conversationJob(ctx.session.stateHash, hashes);
    if (this.jobs.has(conversation) || this.jobs.size >= summariser.precompact.concurrency) {
      this.count('busy');
      return;
    }
    const job: PrecompactJob = { cut: 0, abort: new AbortController(), done: Promise.resolve() };
    this.jobs.add(conversation, job);
    this.reporter.precompactRunning(this.jobs.size);
    job.done = this.run(ctx, job, `${PRECOMPACT_LOCK}:${hashes[1] ?? ''}`)
      .then((outcome) => this.count(outcome))
      .catch((err: unknown) => {
        if (job.abort.signal.aborted) return this.count('abandoned');
        this.count('failed');
        this.reporter.precompactFailed(reasonOf(err), ctx.conv.route, err);
      })
      .finally(() => {
        this.jobs.delete(conversation);
        this.reporter.precompactRunning(this.jobs.size);
      });
  }

  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    const jobs = this.jobs.all();
    for (const job of jobs) job.abort.abort();
    await Promise.allSettled(jobs.map((j) => j.done));
  }

  private async run(ctx: RequestContext, job: PrecompactJob, lockKey: string): Promise<PrecompactOutcome> {
    // The client's request is over: the job has its own signal, aborted when moot or at shutdown. It plans and asks as
    // the next request will be measured: with the count factor this answer's usage taught (ADR 0003) and the budget
    // that leaves, so that the cut and the summary are the ones that request takes.
    const { threshold, reserveOutput } = this.config.compaction;
    const model = ctx.conv.model;
    const counter = this.counter.counterFor(model);
    const estimated = ctx.count.source === 'estimate' || ctx.count.source === 'calibrated';
    const bg: RequestContext = {
      ...ctx,
      count: estimated ? this.counter.estimate(ctx.conv) : { ...ctx.count, counter },
      budget: marginedBudget(
        computeBudget(ctx.window.window, threshold, reserveOutput),
        estimated && this.counter.unproven(model),
      ),
      input: { ...ctx.input, signal: job.abort.signal },
      reason: 'budget',
    };
    // One job per conversation across replicas too: with turns alternating between pods, the next turn reached the other
    // replica while this one's summary was under way, and it summarised a stretch of its own (issue 30 item 7). The
    // lock outlives a summary that times out; a job still running past it costs a duplicate call, never an answer.
    const lock = await this.memo.lock(bg.session.stateHash, lockKey, this.config.summariser.timeoutMs * 2);
    if (!lock) return 'busy';
    try {
      return await this.runLocked(bg, job);
    } finally {
      await lock.release();
    }
  }

  private async runLocked(bg: RequestContext, job: PrecompactJob): Promise<PrecompactOutcome> {
    const hashes = conversationPrefixHashes(bg.conv);
    const entries = await this.stretches.lookup(bg, hashes);
    // The foreground plans from the cuts clients' requests took (compaction-engine.ts), and so does this plan.
    const planned = requestPlanInput(
      bg,
      this.config.compaction,
      entries.filter((e) => !e.precomputed),
      { ahead: true },
    );
    const plan = planCompaction(planned.input);
    if (plan.action !== 'compact') return 'not_needed';
    // The foreground clears old tool results first, and summarises only when that is not enough (issue 32 item 3).
    const { messages, requestTokens } = planned.input;
    if (this.config.compaction.clearToolResults && resultClearing(messages, requestTokens, bg))
      return 'not_needed';
    // A cut past this request's messages evicts the answer to it, which only the next request carries: nothing can
    // be summarised ahead of that turn (the planner keeps such cuts to turns it cannot spare: ADR 0021).
    if (plan.cut >= bg.conv.messages.length) return 'not_ahead';
    // Summarised already, ahead or for a request.
    if (entries.some((e) => e.cut === plan.cut)) return 'not_needed';
    if (!this.stretches.worthSummarising(bg, plan.from, plan.cut)) return 'not_needed';
    job.cut = plan.cut;
    const made = await this.stretches.summarise(bg, hashes, planned.memo, plan.from, plan.cut, {
      precomputed: true,
    });
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
